// SPDX-License-Identifier: Apache-2.0
// Writes the golden-test recordings: small perf.data files built record by
// record (testing/record_builder.h + perfdata::FileWriter), so they are
// deterministic and free of host specifics. Usage: bpfprof_golden_gen <dir>
// writes <dir>/<case>/perf.data for every case. See README.md here.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "perfdata/writer.h"
#include "testing/record_builder.h"

namespace bpfprof::golden {
namespace {

using testing::ByteVec;

constexpr uint64_t kSampleType = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
                                 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
                                 PERF_SAMPLE_CALLCHAIN;
constexpr uint64_t kCyclesId0 = 1, kCyclesId1 = 2, kDummyId = 3;
constexpr uint64_t kT0 = 1'000'000'000'000;  // "boot + 1000 s"
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kKernelCtx = perf::kContextKernel, kUserCtx = perf::kContextUser;

// Kernel text as the recorder's kallsyms snapshot would store it.
constexpr const char* kKallsyms =
    "ffffffff81000000 T _stext\n"
    "ffffffff81000000 T _text\n"
    "ffffffff81100000 T __sys_bpf\n"
    "ffffffff81100400 T bpf_prog_test_run_skb\n"
    "ffffffff81100800 T bpf_test_run\n"
    "ffffffff81100c00 T memcpy\n"
    "ffffffff81101000 T entry_SYSCALL_64\n"
    "ffffffff81200000 T _etext\n"
    "ffffffffc0100000 t nft_do_chain\t[nf_tables]\n"
    "ffffffffc0100400 t nft_immediate_eval\t[nf_tables]\n";

// Addresses used by the samples.
constexpr uint64_t kSysBpf = 0xffffffff81100020, kTestRun = 0xffffffff81100810;
constexpr uint64_t kMemcpy = 0xffffffff81100c40, kEntry = 0xffffffff81101010;
constexpr uint64_t kNftChain = 0xffffffffc0100080, kNoKernelSym = 0xffffffff90000000;
constexpr uint64_t kExisting = 0xffffffffc0001000, kTrampoline = 0xffffffffc0005000;
constexpr uint64_t kReused = 0xffffffffc0002000;  // shortlived, then reuser

class Builder {
 public:
  explicit Builder(uint64_t sample_type) : st_(sample_type) {}

  testing::TrailerValues trailer(uint32_t pid, uint64_t time, uint32_t cpu = 0) const {
    return testing::TrailerValues{pid, pid, time, kDummyId, 0, cpu};
  }
  void add(ByteVec r) { round_.insert(round_.end(), r.begin(), r.end()); }
  void comm(uint32_t pid, std::string_view name, uint64_t time) {
    add(testing::comm_record(st_, pid, pid, name, trailer(pid, time)));
  }
  void mmap2(uint32_t pid, uint64_t start, uint64_t len, std::string_view file, uint64_t time) {
    add(testing::mmap2_record(st_, {pid, pid, start, len, 0, 8, 1, 4242, 0, 5, 2, file},
                              trailer(pid, time)));
  }
  void kernel_map(std::string_view name, uint64_t start, uint64_t len) {
    add(testing::mmap_record(st_, 0xffffffffu, 0, start, len, 0, name, trailer(0xffffffffu, 0),
                             perf::kMiscKernel));
  }
  void ksymbol(uint64_t addr, uint32_t len, std::string_view name, uint64_t time, bool unreg = false,
               uint32_t cpu = 0) {
    add(testing::ksymbol_record(st_, addr, len, perf::kKsymTypeBpf, unreg ? 1 : 0, name,
                                trailer(0xffffffffu, time, cpu)));
  }
  void bpf_event(uint16_t type, uint32_t id, uint8_t tag_byte, uint64_t time, uint32_t cpu = 0) {
    uint8_t tag[perf::kBpfTagSize];
    std::memset(tag, tag_byte, sizeof tag);
    add(testing::bpf_event_record(st_, type, 0, id, tag, trailer(0xffffffffu, time, cpu)));
  }
  // One sample; `chain` already holds context markers (empty: no callchain).
  void sample(uint32_t pid, uint32_t cpu, uint64_t time, uint64_t ip, std::vector<uint64_t> chain,
              bool kernel) {
    testing::SampleValues s;
    s.id = cpu == 0 ? kCyclesId0 : kCyclesId1;
    s.ip = ip;
    s.pid = s.tid = pid;
    s.time = time;
    s.cpu = cpu;
    s.period = 100000;
    s.callchain = std::move(chain);
    add(testing::sample_record(st_, s, kernel ? perf::kMiscKernel : perf::kMiscUser));
  }
  Status flush_round(perfdata::FileWriter& w) {
    BPFPROF_TRY(w.append(round_));
    round_.clear();
    return w.finish_round();
  }
  uint64_t st() const { return st_; }

 private:
  uint64_t st_;
  ByteVec round_;
};

std::vector<perfdata::AttrEntry> attrs(uint64_t sample_type) {
  perf_event_attr cycles{};
  cycles.size = perf::kAttrSizeWritten;
  cycles.type = PERF_TYPE_HARDWARE;
  cycles.config = PERF_COUNT_HW_CPU_CYCLES;
  cycles.freq = 1;
  cycles.sample_freq = 999;
  cycles.sample_type = sample_type;
  cycles.sample_id_all = 1;
  cycles.use_clockid = 1;
  cycles.clockid = 1;  // CLOCK_MONOTONIC
  perf_event_attr dummy = cycles;
  dummy.type = PERF_TYPE_SOFTWARE;
  dummy.config = PERF_COUNT_SW_DUMMY;
  dummy.freq = 0;
  dummy.sample_freq = 0;
  dummy.ksymbol = dummy.bpf_event = dummy.mmap = dummy.mmap2 = dummy.comm = dummy.task = 1;
  return {{cycles, "cycles", {kCyclesId0, kCyclesId1}}, {dummy, "dummy:u", {kDummyId}}};
}

perfdata::Features features(bool kallsyms) {
  perfdata::Features f;
  f.hostname = "golden-host";
  f.osrelease = "6.1.0-golden";
  f.arch = "x86_64";
  f.nr_cpus_avail = f.nr_cpus_online = 2;
  f.cmdline = {"bpfprof", "record", "-a", "-g"};
  if (kallsyms) f.kallsyms = kKallsyms;
  return f;
}

// Kernel stack of a BPF_PROG_TEST_RUN from user space: `leaf` (and more
// frames above it) called through bpf_test_run and the bpf() syscall.
std::vector<uint64_t> test_run_chain(std::vector<uint64_t> bpf_frames, uint64_t user_ip) {
  std::vector<uint64_t> c{kKernelCtx};
  c.insert(c.end(), bpf_frames.begin(), bpf_frames.end());
  c.insert(c.end(), {kTestRun, kSysBpf, kEntry, kUserCtx, user_ip, (user_ip & ~0xffffULL) + 0x500});
  return c;
}

// Programs loaded, run, unloaded; an address reused by a later program; a
// trampoline; kernel, module and user code; lost and throttled records; a
// side-band record that arrives rounds late.
Status write_bpf_lifecycle(const std::string& path) {
  Builder b(kSampleType);
  BPFPROF_ASSIGN_OR_RETURN(auto w, perfdata::FileWriter::create(path, attrs(kSampleType)));
  // Round 1: the state before recording (time 0).
  b.kernel_map("[kernel.kallsyms]_text", 0xffffffff81000000, 0x200000);
  b.kernel_map("[nf_tables]", 0xffffffffc0100000, 0x1000);
  b.comm(100, "app", 0);
  b.mmap2(100, 0x400000, 0x10000, "/golden/bin/app", 0);
  b.ksymbol(kExisting, 0x200, "bpf_prog_1111111111111111_existing", 0);
  b.bpf_event(perf::kBpfEventProgLoad, 10, 0x11, 0);
  b.ksymbol(kTrampoline, 0x1000, "bpf_trampoline_6442450944", 0);
  BPFPROF_TRY(b.flush_round(w));

  // Round 2: a worker process runs a short-lived program with a subprogram.
  b.comm(200, "worker", kT0 + 10 * kMs);
  b.mmap2(200, 0x500000, 0x10000, "/golden/bin/worker", kT0 + 10 * kMs);
  for (int i = 0; i < 6; i++) {
    b.sample(100, 0, kT0 + (20 + i) * kMs, kExisting + 0x10,
             test_run_chain({kExisting + 0x10, kTrampoline + 0x20}, 0x401000), true);
  }
  for (int i = 0; i < 2; i++) {
    b.sample(100, 1, kT0 + (30 + i) * kMs, kTrampoline + 0x30,
             test_run_chain({kTrampoline + 0x30}, 0x401000), true);
  }
  b.ksymbol(kReused, 0x100, "bpf_prog_2222222222222222_shortlived", kT0 + 100 * kMs, false, 1);
  b.ksymbol(kReused + 0x100, 0x80, "bpf_prog_3333333333333333_helper", kT0 + 100 * kMs, false, 1);
  b.bpf_event(perf::kBpfEventProgLoad, 20, 0x22, kT0 + 100 * kMs, 1);
  for (int i = 0; i < 5; i++) {
    b.sample(200, 1, kT0 + (110 + 10 * i) * kMs, kReused + 0x10,
             test_run_chain({kReused + 0x10}, 0x501000), true);
  }
  for (int i = 0; i < 3; i++) {
    b.sample(200, 1, kT0 + (115 + 10 * i) * kMs, kReused + 0x110,
             test_run_chain({kReused + 0x110, kReused + 0x40}, 0x501000), true);
  }
  b.ksymbol(kReused, 0x100, "bpf_prog_2222222222222222_shortlived", kT0 + 200 * kMs, true, 1);
  b.ksymbol(kReused + 0x100, 0x80, "bpf_prog_3333333333333333_helper", kT0 + 200 * kMs, true, 1);
  b.bpf_event(perf::kBpfEventProgUnload, 20, 0x22, kT0 + 200 * kMs, 1);
  // Nothing is loaded at this address now.
  b.sample(200, 1, kT0 + 250 * kMs, kReused + 0x10, test_run_chain({kReused + 0x10}, 0x501000),
           true);
  BPFPROF_TRY(b.flush_round(w));

  // Round 3: the reuser's samples (its load record comes late, in round 5),
  // module and kernel code, user code, lost and throttled.
  for (int i = 0; i < 4; i++) {
    b.sample(200, 1, kT0 + (310 + 20 * i) * kMs, kReused + 0x10,
             test_run_chain({kReused + 0x10}, 0x501000), true);
  }
  for (int i = 0; i < 3; i++) {
    b.sample(100, 0, kT0 + (320 + i) * kMs, kMemcpy, {kKernelCtx, kMemcpy, kNftChain, kEntry}, true);
  }
  b.sample(100, 0, kT0 + 330 * kMs, kNoKernelSym, {kKernelCtx, kNoKernelSym, kEntry}, true);
  for (int i = 0; i < 4; i++) {
    b.sample(100, 0, kT0 + (340 + i) * kMs, 0x401234, {kUserCtx, 0x401234, 0x400500}, false);
  }
  b.add(testing::lost_record(b.st(), kDummyId, 5, b.trailer(0, kT0 + 350 * kMs)));
  b.add(testing::throttle_record(b.st(), false, kT0 + 360 * kMs, kCyclesId0, 0,
                                 b.trailer(0, kT0 + 360 * kMs)));
  BPFPROF_TRY(b.flush_round(w));

  // Round 4: later samples; the worker exits.
  for (int i = 0; i < 2; i++) {
    b.sample(200, 1, kT0 + (400 + i) * kMs, kReused + 0x20,
             test_run_chain({kReused + 0x20}, 0x501000), true);
  }
  b.add(testing::fork_exit_record(b.st(), true, 200, 1, 200, 1, kT0 + 450 * kMs,
                                  b.trailer(200, kT0 + 450 * kMs, 1)));
  BPFPROF_TRY(b.flush_round(w));

  // Round 5: the reuser's load, written late (its time is rounds back).
  b.ksymbol(kReused, 0x180, "bpf_prog_4444444444444444_reuser", kT0 + 300 * kMs, false, 1);
  b.bpf_event(perf::kBpfEventProgLoad, 21, 0x44, kT0 + 300 * kMs, 1);
  b.sample(100, 0, kT0 + 500 * kMs, 0x401000, {kUserCtx, 0x401000, 0x400500}, false);
  BPFPROF_TRY(b.flush_round(w));

  perfdata::Features f = features(true);
  // Stored enrichment for the reuser only: the others count as programs
  // without info and are named from their KSYMBOLs.
  bpf::ProgInfo info;
  info.info.id = 21;
  std::memset(info.info.tag, 0x44, sizeof info.info.tag);
  std::strncpy(info.info.name, "reuser", sizeof info.info.name - 1);
  info.info.nr_jited_ksyms = 1;
  info.info.nr_jited_func_lens = 1;
  info.jited_ksyms = {kReused};
  info.jited_func_lens = {0x180};
  info.ksym_names = {"bpf_prog_4444444444444444_reuser"};
  f.bpf_prog_info.push_back(info);
  return w.close(f);
}

// No callchains, no kallsyms snapshot, a record type nobody knows, a sample
// of an unknown attr: every diagnostic a report must show.
Status write_degraded(const std::string& path) {
  constexpr uint64_t st = kSampleType & ~uint64_t{PERF_SAMPLE_CALLCHAIN};
  Builder b(st);
  BPFPROF_ASSIGN_OR_RETURN(auto w, perfdata::FileWriter::create(path, attrs(st)));
  b.comm(300, "lonely", 0);
  b.ksymbol(kExisting, 0x200, "bpf_prog_5555555555555555_nameless_info", 0);
  b.bpf_event(perf::kBpfEventProgLoad, 30, 0x55, 0);
  BPFPROF_TRY(b.flush_round(w));
  for (int i = 0; i < 3; i++) b.sample(300, 0, kT0 + i * kMs, kExisting + 8, {}, true);
  b.sample(300, 0, kT0 + 5 * kMs, kMemcpy, {}, true);
  b.sample(300, 0, kT0 + 6 * kMs, 0x7f0000001000, {}, false);
  testing::RecordWriter unknown(40, 0);  // not a record type of perf 6.1
  unknown.u64(0);
  b.add(unknown.finish());
  testing::SampleValues stray;
  stray.id = 99;  // no attr has this id
  stray.ip = kMemcpy;
  stray.time = kT0 + 7 * kMs;
  b.add(testing::sample_record(st, stray, perf::kMiscKernel));
  b.ksymbol(0xffffffffc0009000, 0x100, "bpf_prog_6666666666666666_never_loaded", kT0 + 8 * kMs, true);
  BPFPROF_TRY(b.flush_round(w));
  return w.close(features(false));
}

}  // namespace
}  // namespace bpfprof::golden

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <tests/golden dir>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  struct Case {
    const char* name;
    bpfprof::Status (*write)(const std::string&);
  } cases[] = {{"bpf_lifecycle", bpfprof::golden::write_bpf_lifecycle},
               {"degraded", bpfprof::golden::write_degraded}};
  for (const Case& c : cases) {
    const std::string path = dir + "/" + c.name + "/perf.data";
    bpfprof::Status s = c.write(path);
    if (!s.ok()) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), s.error().to_string().c_str());
      return 1;
    }
    std::printf("wrote %s\n", path.c_str());
  }
  // The degraded recording has no snapshot: `report --kallsyms` names its
  // kernel frames from this file.
  const std::string kallsyms = dir + "/degraded/kallsyms";
  std::FILE* out = std::fopen(kallsyms.c_str(), "w");
  if (out == nullptr || std::fputs(bpfprof::golden::kKallsyms, out) < 0 || std::fclose(out) != 0) {
    std::fprintf(stderr, "%s: cannot write\n", kallsyms.c_str());
    return 1;
  }
  std::printf("wrote %s\n", kallsyms.c_str());
  return 0;
}
