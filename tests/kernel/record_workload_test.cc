// SPDX-License-Identifier: Apache-2.0
// Records the BPF workload system-wide with `bpfprof record` and checks, from
// the file alone, every program of the workload's ground truth: KSYMBOL
// register/unregister and BPF_EVENT load/unload with matching id, tag,
// addresses, lengths and names; a program loaded before recording is
// synthesized; stored enrichment; and that Linux perf reads the file.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "perf/abi.h"
#include "perfdata/reader.h"
#include "testing/paths.h"
#include "testing/recording_readback.h"
#include "testing/subprocess.h"
#include "testing/workload_recording.h"

namespace bpfprof::testing {
namespace {

const std::string kBin = BPFPROF_BIN_DIR;

struct Fixture : WorkloadRecording {
  Recording rec;
  TruthProgram held;      // loaded before recording started
  uint32_t held_pid = 0;  // the process that holds it
};

class RecordWorkloadTest : public WorkloadRecordingTest<RecordWorkloadTest, Fixture> {
 protected:
  static void SetUpTestSuite() {
    g = new Fixture;
    if (!g->bpf_allowed(kBin)) return;
    // A program loaded before the recording starts and unloaded after it ends.
    const std::string hold_truth = g->dir.file("hold.json");
    Background hold({kBin + "/bpfprof-workload", "--hold", "--truth", hold_truth, "--quiet"});
    std::string ready = hold.wait_for_line("ready");
    ASSERT_FALSE(ready.empty()) << "bpfprof-workload --hold never became ready";
    g->held_pid = static_cast<uint32_t>(hold.pid());

    if (!g->record_workload(
            kBin, {.workload_args = {"--programs", "24", "--lifetime", "500us,2ms,10ms,50ms",
                                     "--subprog-programs", "3", "--long-lived", "1500ms",
                                     "--threads", "2"}})) {
      return;
    }
    ASSERT_EQ(hold.stop(SIGINT), 0);
    g->rec = read_recording(g->data);
    auto held = read_truth(hold_truth);
    ASSERT_EQ(held.size(), 1u);
    g->held = held[0];
  }

  static std::vector<const KsymbolEvent*> ksyms_at(uint64_t addr, bool unregister) {
    std::vector<const KsymbolEvent*> out;
    for (const auto& k : g->rec.ksymbols)
      if (k.addr == addr && k.unregister == unregister) out.push_back(&k);
    return out;
  }
  static std::vector<const BpfLifecycleEvent*> bpf_events(uint32_t id, uint16_t type) {
    std::vector<const BpfLifecycleEvent*> out;
    for (const auto& b : g->rec.bpf_events)
      if (b.id == id && b.type == type) out.push_back(&b);
    return out;
  }
};

TEST_F(RecordWorkloadTest, WorkloadRanEveryKindOfProgram) {
  std::map<std::string, int> kinds;
  for (const auto& p : g->programs) kinds[p.kind]++;
  EXPECT_EQ(kinds["burner"], 24);
  EXPECT_EQ(kinds["subprog"], 3);
  EXPECT_EQ(kinds["long-lived"], 1);
}

TEST_F(RecordWorkloadTest, EveryProgramHasLoadAndUnloadEvents) {
  for (const auto& p : g->programs) {
    SCOPED_TRACE("program " + std::to_string(p.id) + " " + p.name);
    auto loads = bpf_events(p.id, perf::kBpfEventProgLoad);
    auto unloads = bpf_events(p.id, perf::kBpfEventProgUnload);
    ASSERT_EQ(loads.size(), 1u);
    ASSERT_EQ(unloads.size(), 1u);
    EXPECT_EQ(loads[0]->tag, p.tag);
    EXPECT_EQ(unloads[0]->tag, p.tag);
    EXPECT_GT(loads[0]->time, 0u) << "loaded during recording, so not synthesized";
    EXPECT_LE(loads[0]->time, p.load_ns) << "the kernel reports the load inside the bpf() call";
    EXPECT_GE(unloads[0]->time, p.load_ns) << "unload reported before the load finished";
  }
}

TEST_F(RecordWorkloadTest, EveryFunctionHasKsymbolRegisterAndUnregister) {
  size_t functions = 0;
  for (const auto& p : g->programs) {
    for (const auto& f : p.functions) {
      SCOPED_TRACE(f.ksym);
      functions++;
      auto load = bpf_events(p.id, perf::kBpfEventProgLoad);
      auto unload = bpf_events(p.id, perf::kBpfEventProgUnload);
      ASSERT_EQ(load.size(), 1u);
      ASSERT_EQ(unload.size(), 1u);
      // The JIT address may be reused by a later program: pick the register
      // that belongs to this program's lifetime.
      const KsymbolEvent* reg = nullptr;
      for (const auto* k : ksyms_at(f.addr, false))
        if (k->time <= load[0]->time && k->time + 1'000'000'000 > load[0]->time &&
            (!reg || k->time > reg->time))
          reg = k;
      ASSERT_NE(reg, nullptr) << "no KSYMBOL register at the function's address";
      EXPECT_EQ(reg->name, f.ksym);
      EXPECT_EQ(reg->len, f.len);
      EXPECT_EQ(reg->type, perf::kKsymTypeBpf);
      const KsymbolEvent* unreg = nullptr;
      for (const auto* k : ksyms_at(f.addr, true))
        if (k->time >= load[0]->time && k->time <= unload[0]->time && (!unreg || k->time < unreg->time))
          unreg = k;
      ASSERT_NE(unreg, nullptr) << "no KSYMBOL unregister during the program's lifetime";
      EXPECT_EQ(unreg->name, f.ksym);
      EXPECT_EQ(unreg->len, f.len);
    }
  }
  EXPECT_GE(functions, 24u + 3u * 3u + 1u);
}

TEST_F(RecordWorkloadTest, EachProgramIsLoadedOnce) {
  std::map<uint32_t, int> loads, unloads;
  for (const auto& b : g->rec.bpf_events) (b.type == perf::kBpfEventProgLoad ? loads : unloads)[b.id]++;
  for (const auto& [id, n] : loads) EXPECT_EQ(n, 1) << "program " << id << " loaded twice";
  for (const auto& [id, n] : unloads) EXPECT_EQ(n, 1) << "program " << id << " unloaded twice";
}

TEST_F(RecordWorkloadTest, ProgramLoadedBeforeRecordingIsSynthesized) {
  const TruthProgram& p = g->held;
  auto loads = bpf_events(p.id, perf::kBpfEventProgLoad);
  ASSERT_EQ(loads.size(), 1u);
  EXPECT_EQ(loads[0]->time, 0u) << "synthesized records carry time 0";
  EXPECT_EQ(loads[0]->tag, p.tag);
  EXPECT_TRUE(bpf_events(p.id, perf::kBpfEventProgUnload).empty()) << "unloaded after recording";
  ASSERT_FALSE(p.functions.empty());
  for (const auto& f : p.functions) {
    auto regs = ksyms_at(f.addr, false);
    ASSERT_EQ(regs.size(), 1u) << f.ksym;
    EXPECT_EQ(regs[0]->time, 0u);
    EXPECT_EQ(regs[0]->name, f.ksym) << "synthesized name must be the kernel's own";
    EXPECT_EQ(regs[0]->len, f.len);
  }
  ASSERT_EQ(g->rec.prog_info.count(p.id), 1u) << "synthesized program has stored info";
}

TEST_F(RecordWorkloadTest, SynthesisCoversKernelAndThreads) {
  EXPECT_GT(g->rec.synthesized_mmaps, 1u) << "kernel map and process maps at time 0";
}

TEST_F(RecordWorkloadTest, EnrichmentStoredForProgramsThatLivedLongEnough) {
  std::map<std::string, std::pair<int, int>> by_lifetime;  // kind/lifetime -> (stored, total)
  for (const auto& p : g->programs) {
    uint64_t life = p.unload_ns - p.load_ns;
    std::string cls = life < 1'000'000 ? "<1ms" : life < 10'000'000 ? "1-10ms" : ">=10ms";
    auto it = g->rec.prog_info.find(p.id);
    bool stored = it != g->rec.prog_info.end();
    by_lifetime[cls].second++;
    if (stored) {
      by_lifetime[cls].first++;
      const bpf::ProgInfo& info = it->second;
      ASSERT_EQ(info.jited_ksyms.size(), p.functions.size()) << p.name;
      for (size_t i = 0; i < p.functions.size(); i++) {
        EXPECT_EQ(info.jited_ksyms[i], p.functions[i].addr);
        EXPECT_EQ(info.jited_func_lens[i], p.functions[i].len);
      }
      EXPECT_FALSE(info.jited_insns.empty()) << p.name;
      EXPECT_FALSE(info.line_info.empty()) << p.name;
      EXPECT_EQ(g->rec.btf_sizes.count(info.info.btf_id), 1u) << "BTF of " << p.name;
    } else {
      EXPECT_LT(life, 10'000'000u) << p.name << " lived " << life << " ns and has no stored info";
    }
  }
  for (const auto& [cls, v] : by_lifetime)
    std::printf("enrichment: lifetime %s: %d of %d programs have stored info\n", cls.c_str(),
                v.first, v.second);
}

TEST_F(RecordWorkloadTest, UnloadDelayIsMeasured) {
  std::vector<int64_t> delays;
  for (const auto& p : g->programs) {
    auto unload = bpf_events(p.id, perf::kBpfEventProgUnload);
    if (unload.size() == 1) delays.push_back(static_cast<int64_t>(unload[0]->time) - static_cast<int64_t>(p.unload_ns));
  }
  ASSERT_FALSE(delays.empty());
  std::sort(delays.begin(), delays.end());
  std::printf("unload delay after the workload's close: median %lld us, max %lld us (%zu programs)\n",
              static_cast<long long>(delays[delays.size() / 2] / 1000),
              static_cast<long long>(delays.back() / 1000), delays.size());
  // The enricher releases its reference as soon as the info is read: never a
  // second (perf's side-band thread is measured at 4-11 ms here).
  EXPECT_LT(delays.back(), 1'000'000'000);
}

TEST_F(RecordWorkloadTest, LinuxPerfScriptNamesBpfSamples) {
  const TruthProgram* longest = nullptr;
  for (const auto& p : g->programs)
    if (p.kind == "long-lived") longest = &p;
  ASSERT_NE(longest, nullptr);
  ASSERT_FALSE(longest->functions.empty());
  auto function_at = [&](uint64_t ip) -> const TruthFunction* {
    for (const auto& f : longest->functions)
      if (ip >= f.addr && ip < f.addr + f.len) return &f;
    return nullptr;
  };

  RunResult script = run({"perf", "script", "-i", g->data, "-F", "time,ip,sym", "-G", "--ns"});
  ASSERT_EQ(script.exit_code, 0) << script.err;
  EXPECT_EQ(script.err, "") << "perf script warned";

  // Lines: "<sec>.<nsec>: <ip hex> <sym>". Times are CLOCK_MONOTONIC like the truth.
  std::istringstream lines(script.out);
  std::string line;
  size_t in_range = 0, named = 0, total = 0;
  while (std::getline(lines, line)) {
    unsigned long long sec = 0, nsec = 0, ip = 0;
    char sym[512] = {0};
    if (std::sscanf(line.c_str(), " %llu.%llu: %llx %511s", &sec, &nsec, &ip, sym) < 3) continue;
    total++;
    uint64_t t = sec * 1'000'000'000ull + nsec;
    const TruthFunction* f = function_at(ip);
    if (!f || t < longest->load_ns || t > longest->unload_ns) continue;
    in_range++;
    if (f->ksym == sym) named++;
  }
  std::printf("perf script: %zu samples, %zu inside %s, %zu named by perf\n", total, in_range,
              longest->name.c_str(), named);
  EXPECT_EQ(total, g->rec.samples.size()) << "perf script printed every sample";
  ASSERT_GE(in_range, 50u) << "the long-lived program burned 1.5 s at 999 Hz";
  EXPECT_EQ(named, in_range);
}

TEST_F(RecordWorkloadTest, OurReaderSeesSamplesInTheLongLivedProgram) {
  for (const auto& p : g->programs) {
    if (p.kind != "long-lived") continue;
    size_t n = 0;
    for (const auto& s : g->rec.samples)
      for (const auto& f : p.functions)
        if (s.ip >= f.addr && s.ip < f.addr + f.len && s.time >= p.load_ns && s.time <= p.unload_ns) n++;
    EXPECT_GE(n, 50u);
  }
}

// Who owns the program loaded before recording: the recorder found the
// process holding its fd at start (section 253), and the report names it.
TEST_F(RecordWorkloadTest, HeldProgramIsOwnedByItsHolder) {
  auto reader = perfdata::FileReader::open(g->data);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  const auto& owners = reader->features().owners;
  ASSERT_TRUE(owners.has_value());
  EXPECT_TRUE(std::find(owners->scanned.begin(), owners->scanned.end(), g->held.id) !=
              owners->scanned.end());
  size_t found = 0;
  for (const perfdata::ProgramHolder& h : owners->holders) {
    if (h.prog_id != g->held.id) continue;
    found++;
    EXPECT_EQ(h.pid, g->held_pid);
    EXPECT_TRUE(h.has(perfdata::ProgramHolder::kProgFd));
    EXPECT_EQ(h.comm, "bpfprof-workloa");  // the kernel keeps 15 bytes
  }
  EXPECT_EQ(found, 1u);
  RunResult report = run({kBin + "/bpfprof", "report", "-q", "--instances", "-i", g->data,
                           "--format", "json"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const auto j = nlohmann::json::parse(report.out);
  size_t named = 0;
  for (const auto& p : j.at("programs")) {
    if (p.at("id") != g->held.id) continue;
    named++;
    EXPECT_EQ(p.at("owner"), "bpfprof-workloa[" + std::to_string(g->held_pid) + "]");
    EXPECT_EQ(p.at("load_ns"), 0u);
  }
  EXPECT_EQ(named, 1u);
}

}  // namespace
}  // namespace bpfprof::testing
