// SPDX-License-Identifier: Apache-2.0
// Real-kernel tests of the in-kernel capture: programs loaded while it is
// attached are captured whole at load, equal array by array to what
// bpf_obj_get_info_by_fd reports, even when their fd is closed the instant
// the load returns; a ring too small for them says so instead of cutting.
// Links made while it runs, a BPF_PROG_ATTACH to a cgroup and test runs are
// captured, and named as the start and end listings name them.
#include "testing/capture_kernel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "bpf/query.h"
#include "capture/capture.h"
#include "capture/capture_object.h"
#include "host/attach_points.h"
#include "perf/tracefs.h"
#include "perfdata/reader.h"
#include "record/recorder.h"
#include "testing/cgroup2.h"
#include "testing/paths.h"
#include "testing/subprocess.h"

namespace bpfprof::capture {
namespace {

using namespace testing::capture_kernel;

// A socket filter "r0 = 0; exit" whose fd is closed as soon as the load returns.
uint32_t load_and_close_at_once() {
  bpf_insn prog[2] = {};
  prog[0].code = BPF_ALU64 | BPF_MOV | BPF_K;
  prog[1].code = BPF_JMP | BPF_EXIT;
  int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "bpfprof_brief", "GPL", prog, 2, nullptr);
  if (fd < 0) return 0;
  bpf_prog_info info{};
  uint32_t len = sizeof info;
  uint32_t id = bpf_obj_get_info_by_fd(fd, &info, &len) == 0 ? info.id : 0;
  ::close(fd);
  return id;
}

template <class T>
std::vector<std::byte> raw(const std::vector<T>& v) {
  std::vector<std::byte> out(v.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// Every field and array of `want` (read by fd) in `got` (captured), except
// what only exists later: run_time_ns, run_cnt, recursion_misses.
void expect_same(const bpf::ProgInfo& got, const bpf::ProgInfo& want) {
  const bpf_prog_info& g = got.info;
  const bpf_prog_info& w = want.info;
  EXPECT_EQ(g.type, w.type);
  EXPECT_EQ(g.id, w.id);
  EXPECT_EQ(0, std::memcmp(g.tag, w.tag, sizeof g.tag));
  EXPECT_EQ(g.jited_prog_len, w.jited_prog_len);
  EXPECT_EQ(g.xlated_prog_len, w.xlated_prog_len);
  EXPECT_EQ(g.load_time, w.load_time);
  EXPECT_EQ(g.created_by_uid, w.created_by_uid);
  EXPECT_EQ(g.nr_map_ids, w.nr_map_ids);
  EXPECT_EQ(0, std::memcmp(g.name, w.name, sizeof g.name));
  EXPECT_EQ(g.ifindex, w.ifindex);
  EXPECT_EQ(g.gpl_compatible, w.gpl_compatible);
  EXPECT_EQ(g.netns_dev, w.netns_dev);
  EXPECT_EQ(g.netns_ino, w.netns_ino);
  EXPECT_EQ(g.nr_jited_ksyms, w.nr_jited_ksyms);
  EXPECT_EQ(g.nr_jited_func_lens, w.nr_jited_func_lens);
  EXPECT_EQ(g.btf_id, w.btf_id);
  EXPECT_EQ(g.func_info_rec_size, w.func_info_rec_size);
  EXPECT_EQ(g.nr_func_info, w.nr_func_info);
  EXPECT_EQ(g.nr_line_info, w.nr_line_info);
  EXPECT_EQ(g.line_info_rec_size, w.line_info_rec_size);
  EXPECT_EQ(g.jited_line_info_rec_size, w.jited_line_info_rec_size);
  EXPECT_EQ(g.nr_jited_line_info, w.nr_jited_line_info);
  EXPECT_EQ(g.nr_prog_tags, w.nr_prog_tags);
  EXPECT_EQ(g.verified_insns, w.verified_insns);
  EXPECT_EQ(g.attach_btf_obj_id, w.attach_btf_obj_id);
  EXPECT_EQ(g.attach_btf_id, w.attach_btf_id);
  EXPECT_TRUE(got.jited_insns == want.jited_insns) << "JIT image";
  EXPECT_EQ(got.jited_ksyms, want.jited_ksyms);
  EXPECT_EQ(got.jited_func_lens, want.jited_func_lens);
  EXPECT_TRUE(got.func_info == want.func_info) << "func_info";
  EXPECT_TRUE(got.line_info == want.line_info) << "line_info";
  EXPECT_EQ(got.jited_line_info, want.jited_line_info);
  EXPECT_TRUE(raw(got.prog_tags) == raw(want.prog_tags)) << "prog_tags";
  // The whole scalar part, with the later-only fields and pointers cleared.
  bpf_prog_info a = g, b = w;
  for (bpf_prog_info* i : {&a, &b}) {
    i->run_time_ns = i->run_cnt = i->recursion_misses = 0;
  }
  EXPECT_EQ(0, std::memcmp(&a, &b, sizeof a)) << "bpf_prog_info scalars";
}

TEST(CaptureKernelTest, CapturesProgramsEqualToTheirInfo) {
  std::string why;
  auto capture = start_or_skip({}, why);
  if (!capture) BPFPROF_KERNEL_SKIP("capture cannot run: " + why);

  bpf_object* obj = bpf_object__open_file(BPFPROF_QUERY_PROGS_OBJ, nullptr);
  ASSERT_NE(obj, nullptr);
  ASSERT_EQ(bpf_object__load(obj), 0);
  std::vector<int> fds;
  bpf_program* p;
  bpf_object__for_each_program(p, obj) fds.push_back(bpf_program__fd(p));
  const uint32_t brief = load_and_close_at_once();
  ASSERT_NE(brief, 0u);
  ASSERT_TRUE(capture->consume().ok());

  ASSERT_EQ(fds.size(), 2u);
  for (int fd : fds) {
    auto want = bpf::read_prog_info(fd);
    ASSERT_TRUE(want.ok()) << want.error().to_string();
    SCOPED_TRACE("program " + want->name());
    ASSERT_TRUE(capture->captured(want->id()));
    expect_same(capture->infos().at(want->id()), *want);
    // Its BTF, once, exactly as the kernel returns it by id.
    ASSERT_NE(want->info.btf_id, 0u);
    auto btf = bpf::read_btf(want->info.btf_id);
    ASSERT_TRUE(btf.ok());
    ASSERT_TRUE(capture->btfs().count(want->info.btf_id));
    EXPECT_TRUE(capture->btfs().at(want->info.btf_id).data == btf->data);
  }
  // The bpf2bpf program has two JIT'd functions, each with its tag.
  EXPECT_TRUE(std::any_of(capture->infos().begin(), capture->infos().end(),
                          [](const auto& kv) { return kv.second.jited_ksyms.size() == 2; }));
  bpf_object__close(obj);

  // Gone before anyone could ask by id, still captured.
  ASSERT_TRUE(capture->captured(brief));
  const bpf::ProgInfo& b = capture->infos().at(brief);
  EXPECT_EQ(b.name(), "bpfprof_brief");
  EXPECT_EQ(b.jited_ksyms.size(), 1u);
  EXPECT_EQ(b.jited_insns.size(), b.info.jited_prog_len);
  EXPECT_GT(b.jited_insns.size(), 0u);
  EXPECT_FALSE(bpf::prog_fd_by_id(brief).ok());

  capture->stop();
  const CaptureCounters n = capture->counters();
  EXPECT_GE(n.captured, 3u);
  EXPECT_EQ(n.incomplete, 0u);
  EXPECT_EQ(n.lost_records, 0u);
  EXPECT_EQ(capture->bad_records(), 0u);
}

TEST(CaptureKernelTest, LinksAttachmentsAndTestRunsAreCaptured) {
  std::string why;
  auto capture = start_or_skip(CaptureConfig{}, why);
  if (!capture) BPFPROF_KERNEL_SKIP("capture cannot run: " + why);
  const std::string mount = testing::cgroup2_mount();
  if (mount.empty()) BPFPROF_KERNEL_SKIP("no cgroup v2 hierarchy mounted");
  uint64_t getppid_id = 0;
  ASSERT_TRUE(perf::with_tracefs([&](const std::string& dir) {
                std::ifstream in(dir + "/events/syscalls/sys_enter_getppid/id");
                in >> getppid_id;
              }).ok());
  ASSERT_NE(getppid_id, 0u);

  // raw_tp through BPF_RAW_TRACEPOINT_OPEN.
  UniqueFd raw_prog = load_trivial(BPF_PROG_TYPE_RAW_TRACEPOINT, "bpfprof_rawtp");
  ASSERT_TRUE(raw_prog.valid());
  UniqueFd raw_link(bpf_raw_tracepoint_open("task_rename", raw_prog.get()));
  ASSERT_TRUE(raw_link.valid());
  // A tracepoint and a plain software event through BPF_LINK_CREATE.
  UniqueFd tp_prog = load_trivial(BPF_PROG_TYPE_TRACEPOINT, "bpfprof_tp");
  UniqueFd tp_event = perf_event(PERF_TYPE_TRACEPOINT, getppid_id);
  ASSERT_TRUE(tp_prog.valid() && tp_event.valid());
  UniqueFd tp_link(bpf_link_create(tp_prog.get(), tp_event.get(), BPF_PERF_EVENT, nullptr));
  ASSERT_TRUE(tp_link.valid());
  UniqueFd pe_prog = load_trivial(BPF_PROG_TYPE_PERF_EVENT, "bpfprof_pe");
  UniqueFd pe_event = perf_event(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
  ASSERT_TRUE(pe_prog.valid() && pe_event.valid());
  UniqueFd pe_link(bpf_link_create(pe_prog.get(), pe_event.get(), BPF_PERF_EVENT, nullptr));
  ASSERT_TRUE(pe_link.valid());
  // cgroup_skb/egress with BPF_PROG_ATTACH on a cgroup made here, detached at once.
  const std::string cg = mount + "/bpfprof-capture-" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(cg.c_str(), 0755), 0) << cg;
  const auto cg_id = host::cgroup_id(cg);
  UniqueFd skb_prog = load_trivial(BPF_PROG_TYPE_CGROUP_SKB, "bpfprof_skb", BPF_CGROUP_INET_EGRESS);
  UniqueFd cg_fd(::open(cg.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(skb_prog.valid() && cg_fd.valid());
  EXPECT_EQ(bpf_prog_attach(skb_prog.get(), cg_fd.get(), BPF_CGROUP_INET_EGRESS, 0), 0);
  EXPECT_EQ(bpf_prog_detach2(skb_prog.get(), cg_fd.get(), BPF_CGROUP_INET_EGRESS), 0);
  cg_fd.reset();
  ::rmdir(cg.c_str());
  // Two test runs of one program: one record.
  UniqueFd run_prog = load_trivial(BPF_PROG_TYPE_SOCKET_FILTER, "bpfprof_run");
  ASSERT_TRUE(run_prog.valid());
  unsigned char packet[64] = {};
  for (int i = 0; i < 2; i++) {
    LIBBPF_OPTS(bpf_test_run_opts, run, .data_in = packet, .data_size_in = sizeof packet);
    ASSERT_EQ(bpf_prog_test_run_opts(run_prog.get(), &run), 0);
  }

  ASSERT_TRUE(capture->consume().ok());
  std::vector<CapturedLink> links;
  std::vector<uint32_t> missed;
  capture->take_links(links, missed);
  EXPECT_TRUE(missed.empty());
  std::map<uint32_t, CapturedLink> by_prog;
  for (const CapturedLink& l : links) by_prog[l.prog_id] = l;
  const uint32_t raw_id = prog_id(raw_prog.get()), tp_id = prog_id(tp_prog.get()),
                 pe_id = prog_id(pe_prog.get()), skb_id = prog_id(skb_prog.get());
  ASSERT_TRUE(by_prog.count(raw_id) && by_prog.count(tp_id) && by_prog.count(pe_id) &&
              by_prog.count(skb_id))
      << links.size() << " links captured";
  EXPECT_EQ(by_prog[raw_id].link_id, link_id(raw_link.get()));
  EXPECT_EQ(by_prog[raw_id].name, "task_rename");
  EXPECT_EQ(by_prog[tp_id].link_id, link_id(tp_link.get()));
  EXPECT_EQ(by_prog[tp_id].category, "syscalls");
  EXPECT_FALSE(by_prog[pe_id].has(CAPTURE_LINK_NAMED));  // no tracepoint: by id
  EXPECT_TRUE(by_prog[skb_id].has(CAPTURE_LINK_PROG_ATTACH));
  EXPECT_EQ(by_prog[skb_id].link_id, 0u);
  ASSERT_TRUE(cg_id.has_value());
  EXPECT_EQ(by_prog[skb_id].cgroup_id, *cg_id);
  EXPECT_EQ(by_prog[skb_id].attach_type, static_cast<uint32_t>(BPF_CGROUP_INET_EGRESS));
  EXPECT_EQ(capture->test_runs().count(prog_id(run_prog.get())), 1u);

  // Named as the listings name them; the perf_event link queried by its id.
  host::CapturedAttachNamer namer(host::Cgroup2Mount{mount}, {{*cg_id, cg}});
  std::vector<perfdata::AttachEntry> entries;
  namer.name(links, missed, entries);
  std::map<uint32_t, perfdata::AttachEntry> entry;
  for (const perfdata::AttachEntry& e : entries) entry[e.prog_id] = e;
  EXPECT_EQ(entry[raw_id].point, "raw_tp/task_rename");
  EXPECT_EQ(entry[raw_id].source, perfdata::AttachEntry::kCaptured);
  EXPECT_EQ(entry[tp_id].point, "tracepoint/syscalls/sys_enter_getppid");
  EXPECT_EQ(entry[pe_id].point, "perf_event");
  EXPECT_EQ(entry[pe_id].source, perfdata::AttachEntry::kById);
  EXPECT_EQ(entry[skb_id].point, "cgroup_skb/egress:" + cg);
  EXPECT_EQ(entry[skb_id].source, perfdata::AttachEntry::kCaptured);
  EXPECT_EQ(namer.lost(), 0u);

  capture->stop();
  const CaptureCounters n = capture->counters();
  EXPECT_GE(n.links, 4u);
  EXPECT_EQ(n.links_missed, 0u);
  EXPECT_EQ(capture->bad_records(), 0u);
}

// The exit program reads the command from the caller's saved registers:
// many commands it does not capture change nothing, and a load right after
// them, a load the verifier refuses, two threads loading at once and a
// test run are each seen for what they are.
TEST(CaptureKernelTest, ExitProgramDecidesFromTheCommand) {
  std::string why;
  auto capture = start_or_skip(CaptureConfig{}, why);
  if (!capture) BPFPROF_KERNEL_SKIP("capture cannot run: " + why);

  // Commands not captured, many of them: a map's lookups and updates, and
  // a program's info by fd.
  UniqueFd map(bpf_map_create(BPF_MAP_TYPE_ARRAY, "bpfprof_gate", 4, 8, 1, nullptr));
  ASSERT_TRUE(map.valid());
  UniqueFd prog = load_trivial(BPF_PROG_TYPE_SOCKET_FILTER, "bpfprof_gate");
  ASSERT_TRUE(prog.valid());
  uint32_t key = 0;
  uint64_t value = 0;
  for (int i = 0; i < 1000; i++) {
    ASSERT_EQ(bpf_map_update_elem(map.get(), &key, &value, BPF_ANY), 0);
    ASSERT_EQ(bpf_map_lookup_elem(map.get(), &key, &value), 0);
    bpf_prog_info info{};
    uint32_t len = sizeof info;
    ASSERT_EQ(bpf_obj_get_info_by_fd(prog.get(), &info, &len), 0);
  }
  ASSERT_TRUE(capture->consume().ok());
  const uint64_t captured_before = capture->counters().captured;
  // A load right after them is captured.
  const uint32_t after = load_and_close_at_once();
  ASSERT_NE(after, 0u);
  // A load the verifier refuses (no exit) sends nothing.
  bpf_insn bad[1] = {};
  bad[0].code = BPF_ALU64 | BPF_MOV | BPF_K;
  EXPECT_LT(bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "bpfprof_bad", "GPL", bad, 1, nullptr), 0);
  // A test run of the first program: the program it ran, once.
  char packet[64] = {};
  for (int i = 0; i < 3; i++) {
    LIBBPF_OPTS(bpf_test_run_opts, run, .data_in = packet, .data_size_in = sizeof packet);
    ASSERT_EQ(bpf_prog_test_run_opts(prog.get(), &run), 0);
  }

  // Two threads loading at once: every load captured.
  constexpr int kLoads = 200;
  std::vector<uint32_t> ids[2];
  std::thread threads[2];
  for (int t = 0; t < 2; t++) {
    threads[t] = std::thread([&ids, t] {
      for (int i = 0; i < kLoads; i++) ids[t].push_back(load_and_close_at_once());
    });
  }
  for (std::thread& t : threads) t.join();

  ASSERT_TRUE(capture->consume().ok());
  EXPECT_TRUE(capture->captured(prog_id(prog.get())));
  EXPECT_TRUE(capture->captured(after));
  EXPECT_EQ(capture->test_runs().count(prog_id(prog.get())), 1u);
  for (const std::vector<uint32_t>& v : ids) {
    ASSERT_EQ(v.size(), static_cast<size_t>(kLoads));
    for (uint32_t id : v) {
      ASSERT_NE(id, 0u);
      EXPECT_TRUE(capture->captured(id)) << "program " << id;
    }
  }
  capture->stop();
  const CaptureCounters n = capture->counters();
  // Other processes may load programs meanwhile: at least ours.
  EXPECT_GE(n.captured, captured_before + 1 + 2 * kLoads);
  EXPECT_EQ(n.incomplete, 0u);
  EXPECT_EQ(n.lost_records, 0u);
  EXPECT_EQ(capture->bad_records(), 0u);
}

// A ring of one page cannot hold a program with BTF: the capture says it is
// incomplete (and counts it) instead of storing a cut one.
TEST(CaptureKernelTest, TinyRingReportsIncompleteNeverCut) {
  std::string why;
  CaptureConfig config;
  config.ring_bytes = static_cast<uint32_t>(::sysconf(_SC_PAGESIZE));
  auto capture = start_or_skip(config, why);
  if (!capture) BPFPROF_KERNEL_SKIP("capture cannot run: " + why);
  bpf_object* obj = bpf_object__open_file(BPFPROF_QUERY_PROGS_OBJ, nullptr);
  ASSERT_NE(obj, nullptr);
  ASSERT_EQ(bpf_object__load(obj), 0);
  std::vector<uint32_t> ids;
  bpf_program* p;
  bpf_object__for_each_program(p, obj) {
    bpf_prog_info info{};
    uint32_t len = sizeof info;
    ASSERT_EQ(bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len), 0);
    ids.push_back(info.id);
  }
  // Nothing is drained while both load: the second finds the ring full, and
  // the capture asks for a drain at once.
  pollfd wake{capture->wake_fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&wake, 1, 0), 1);
  ASSERT_TRUE(capture->consume().ok());
  capture->stop();
  size_t not_captured = 0;
  for (uint32_t id : ids) {
    if (capture->captured(id)) continue;
    not_captured++;
    EXPECT_TRUE(capture->incomplete().count(id)) << "program " << id << " neither captured nor missed";
  }
  EXPECT_GT(not_captured, 0u);
  EXPECT_GT(capture->missed(), 0u);
  const CaptureCounters n = capture->counters();
  EXPECT_GT(n.incomplete + n.lost_records, 0u);
  EXPECT_EQ(capture->bad_records(), 0u);
  bpf_object__close(obj);
}

}  // namespace
}  // namespace bpfprof::capture

namespace bpfprof::capture {
namespace {

using namespace testing::capture_kernel;

// The recorder's default: programs loaded during the recording are captured
// in the kernel; the file's BPF_PROG_INFO entry of a long-lived one equals
// bpf_obj_get_info_by_fd array by array, one closed at once is stored too,
// and section 251 says no reference was held.
TEST(CaptureRecordKernelTest, RecorderStoresCapturedInfoByDefault) {
  bpfprof::testing::TempDir dir;
  record::RecordOptions o = system_wide(dir, "capture.data", 1.0);
  std::vector<bpf::ProgInfo> want;
  uint32_t brief = 0;
  bpf_object* obj = nullptr;
  auto stats = record_while(o, [&] {
    obj = bpf_object__open_file(BPFPROF_QUERY_PROGS_OBJ, nullptr);
    if (!obj || bpf_object__load(obj) != 0) return;
    bpf_program* p;
    bpf_object__for_each_program(p, obj) {
      if (auto info = bpf::read_prog_info(bpf_program__fd(p)); info.ok()) want.push_back(*info);
    }
    brief = load_and_close_at_once();
  });
  if (!stats.ok() && stats.error().code == Errc::kPermission) {
    BPFPROF_KERNEL_SKIP(stats.error().to_string());
  }
  ASSERT_TRUE(stats.ok()) << stats.error().to_string();
  ASSERT_EQ(want.size(), 2u) << "loading the test programs failed";
  ASSERT_NE(brief, 0u);
  EXPECT_TRUE(stats->enrichment.in_kernel) << stats->enrichment.capture_refused;

  auto reader = perfdata::FileReader::open(o.output);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  const perfdata::Features& f = reader->features();
  std::map<uint32_t, const bpf::ProgInfo*> stored;
  for (const bpf::ProgInfo& p : f.bpf_prog_info) stored[p.id()] = &p;
  std::set<uint32_t> btfs;
  for (const bpf::BtfBlob& b : f.bpf_btf) btfs.insert(b.id);
  for (const bpf::ProgInfo& w : want) {
    SCOPED_TRACE("program " + w.name());
    ASSERT_TRUE(stored.count(w.id()));
    // Through the file: the writer's entry, read back.
    expect_same(*stored.at(w.id()), w);
    EXPECT_TRUE(btfs.count(w.info.btf_id));
  }
  ASSERT_TRUE(stored.count(brief)) << "closed at once, never readable by id";
  EXPECT_EQ(stored.at(brief)->name(), "bpfprof_brief");

  ASSERT_TRUE(f.enrichment.has_value());
  const perfdata::EnrichmentSection& e = *f.enrichment;
  EXPECT_EQ(e.path, perfdata::EnrichmentPath::kInKernel);
  EXPECT_EQ(e.in_kernel_errno, 0);
  EXPECT_EQ(e.capture_refused, "");
  for (uint32_t id : {want[0].id(), want[1].id(), brief}) {
    const auto* p = entry_of(e, id);
    ASSERT_NE(p, nullptr) << id;
    EXPECT_TRUE(p->has(perfdata::EnrichedProgramEntry::kCaptured)) << id;
    EXPECT_TRUE(p->has(perfdata::EnrichedProgramEntry::kStored)) << id;
    EXPECT_EQ(p->hold_ns, 0u) << id;
  }
  EXPECT_EQ(stats->enrichment.max_hold_ns(), 0u);
  EXPECT_EQ(stats->enrichment.threads, 0u) << "no enricher thread while capture serves";
  bpf_object__close(obj);
}

// A capture ring of one page cannot take a program whose BTF is larger than
// a page: the load wakes the recorder, which enriches it by id while the
// program is still loaded. (Programs whose records merely add up to more
// than a page fit or not depending on whether the recorder drained in
// between: the test would flake on an idle machine.)
TEST(CaptureRecordKernelTest, FullCaptureRingFallsBackById) {
  bpfprof::testing::TempDir dir;
  record::RecordOptions o = system_wide(dir, "tiny.data", 1.0);
  o.capture_ring_bytes = 4096;
  std::vector<uint32_t> ids;
  auto stats = record_while(o, [&] {
    bpf_object* obj = nullptr;
    ids = load_big_btf_programs(obj);
    // Loaded long enough for the fallback; asserted on records, not time.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    bpf_object__close(obj);
  });
  if (!stats.ok() && stats.error().code == Errc::kPermission) {
    BPFPROF_KERNEL_SKIP(stats.error().to_string());
  }
  ASSERT_TRUE(stats.ok()) << stats.error().to_string();
  ASSERT_EQ(ids.size(), 1u);
  auto reader = perfdata::FileReader::open(o.output);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  const perfdata::Features& f = reader->features();
  std::set<uint32_t> stored;
  for (const bpf::ProgInfo& p : f.bpf_prog_info) stored.insert(p.id());
  ASSERT_TRUE(f.enrichment.has_value());
  EXPECT_EQ(f.enrichment->path, perfdata::EnrichmentPath::kInKernel);
  size_t by_id = 0;
  for (uint32_t id : ids) {
    EXPECT_TRUE(stored.count(id)) << "program " << id << " lost";
    const auto* p = entry_of(*f.enrichment, id);
    ASSERT_NE(p, nullptr);
    if (p->has(perfdata::EnrichedProgramEntry::kById)) by_id++;
  }
  EXPECT_EQ(by_id, ids.size()) << "a program captured whole through a one-page ring";
  EXPECT_GT(f.enrichment->capture_lost, 0u) << "a full ring is counted";
}

// --enrich=user: the user-space enricher, as before capture existed, and
// the file says capture was not tried.
TEST(CaptureRecordKernelTest, EnrichUserUsesTheEnricher) {
  bpfprof::testing::TempDir dir;
  record::RecordOptions o = system_wide(dir, "user.data", 0.8);
  o.enrich = record::EnrichMode::kUser;
  std::vector<uint32_t> ids;
  auto stats = record_while(o, [&] {
    bpf_object* obj = nullptr;
    ids = load_test_programs(obj);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    bpf_object__close(obj);
  });
  if (!stats.ok() && stats.error().code == Errc::kPermission) {
    BPFPROF_KERNEL_SKIP(stats.error().to_string());
  }
  ASSERT_TRUE(stats.ok()) << stats.error().to_string();
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_FALSE(stats->enrichment.in_kernel);
  EXPECT_GT(stats->enrichment.threads, 0u);
  auto reader = perfdata::FileReader::open(o.output);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  const perfdata::Features& f = reader->features();
  ASSERT_TRUE(f.enrichment.has_value());
  EXPECT_EQ(f.enrichment->path, perfdata::EnrichmentPath::kUserSpace);
  EXPECT_EQ(f.enrichment->in_kernel_errno, -1);
  EXPECT_NE(f.enrichment->capture_refused.find("--enrich=user"), std::string::npos);
  std::set<uint32_t> stored;
  for (const bpf::ProgInfo& p : f.bpf_prog_info) stored.insert(p.id());
  for (uint32_t id : ids) {
    EXPECT_TRUE(stored.count(id)) << id;
    const auto* p = entry_of(*f.enrichment, id);
    ASSERT_NE(p, nullptr);
    EXPECT_FALSE(p->has(perfdata::EnrichedProgramEntry::kCaptured));
    EXPECT_GT(p->hold_ns, 0u) << "a reference was held";
  }
}

}  // namespace
}  // namespace bpfprof::capture
