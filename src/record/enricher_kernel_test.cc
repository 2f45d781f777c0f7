// SPDX-License-Identifier: Apache-2.0
// Real-kernel tests of the enricher in-process: the enrichment section (251)
// says how programs were enriched, --bpf-stats stores run statistics (252),
// and one unpinned thread for all CPUs works like the default, a pinned thread
// per CPU.
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include <gtest/gtest.h>

#include "perfdata/reader.h"
#include "record/recorder.h"
#include "testing/capture_kernel.h"
#include "testing/subprocess.h"

namespace bpfprof::record {
namespace {

using perfdata::EnrichedProgramEntry;
using perfdata::ProgramRunStats;

// A socket filter "r0 = 0; exit", test-run `runs` times in `rounds` calls.
struct Program {
  int fd = -1;
  uint32_t id = 0;
  Program() {
    bpf_insn prog[2] = {};
    prog[0].code = BPF_ALU64 | BPF_MOV | BPF_K;
    prog[1].code = BPF_JMP | BPF_EXIT;
    fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "bpfprof_stats", "GPL", prog, 2, nullptr);
    if (fd < 0) return;
    bpf_prog_info info{};
    uint32_t len = sizeof info;
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0) id = info.id;
  }
  ~Program() {
    if (fd >= 0) ::close(fd);
  }
  void run(int repeat) const {
    char packet[64] = {};
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = packet, .data_size_in = sizeof packet,
                .repeat = repeat);
    (void)bpf_prog_test_run_opts(fd, &opts);
  }
};

using testing::capture_kernel::record_while;

// Loads a Program and runs it 1000 times twice, each time outliving a poll
// (100 ms) so the last value covers the runs; its id (0 if it did not load).
uint32_t load_and_run_twice() {
  Program p;
  if (p.fd < 0) return 0;
  p.run(1000);
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  p.run(1000);
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  return p.id;
}

TEST(EnricherKernelTest, StoresEnrichmentAndRunStatistics) {
  bpfprof::testing::TempDir dir;
  RecordOptions o;
  o.system_wide = true;
  o.duration_s = 1.5;
  o.bpf_stats = true;
  o.enrich = EnrichMode::kUser;
  o.output = dir.file("stats.data");
  uint32_t id = 0;
  auto stats = record_while(o, [&] { id = load_and_run_twice(); });
  if (!stats.ok() && stats.error().code == Errc::kPermission) {
    BPFPROF_KERNEL_SKIP(stats.error().to_string());
  }
  ASSERT_TRUE(stats.ok()) << stats.error().to_string();
  ASSERT_NE(id, 0u) << "bpf_prog_load failed";
  EXPECT_EQ(stats->enrichment.threads, std::thread::hardware_concurrency());
  EXPECT_TRUE(stats->enrichment.pinned);

  auto reader = perfdata::FileReader::open(o.output);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  const perfdata::Features& f = reader->features();
  ASSERT_TRUE(f.enrichment.has_value()) << "feature 251";
  // Root has CAP_SYS_NICE: the enricher runs SCHED_FIFO.
  if (::geteuid() == 0) {
    EXPECT_EQ(f.enrichment->sched, perfdata::EnricherSched::kFifo);
  }
  EXPECT_EQ(f.enrichment->in_kernel_errno, -1) << "capture not tried with --enrich=user";
  EXPECT_EQ(f.enrichment->threads, std::thread::hardware_concurrency());
  EXPECT_TRUE(f.enrichment->pinned);
  const EnrichedProgramEntry* entry = nullptr;
  for (const auto& e : f.enrichment->programs) {
    if (e.id == id) entry = &e;
  }
  ASSERT_NE(entry, nullptr);
  EXPECT_TRUE(entry->has(EnrichedProgramEntry::kStored));
  EXPECT_FALSE(entry->has(EnrichedProgramEntry::kGone));
  EXPECT_GT(entry->load_ns, 0u);
  EXPECT_GE(entry->acquired_ns, entry->load_ns);

  ASSERT_TRUE(f.run_stats.has_value()) << "feature 252";
  EXPECT_GT(f.run_stats->disabled_ns, f.run_stats->enabled_ns);
  const ProgramRunStats* rs = nullptr;
  for (const auto& p : f.run_stats->programs) {
    if (p.id == id) rs = &p;
  }
  ASSERT_NE(rs, nullptr);
  EXPECT_TRUE(rs->has(ProgramRunStats::kLoadedDuring));
  EXPECT_FALSE(rs->has(ProgramRunStats::kReadAtEnd)) << "unloaded before the end";
  EXPECT_TRUE(rs->measured());
  EXPECT_EQ(rs->run_cnt(), 2000u) << "the last poll came after both test runs";
  EXPECT_GT(rs->run_time_ns(), 0u);
}

// With the in-kernel capture (the default) the enricher only polls: a
// program loaded during the recording starts at zero at its load.
TEST(EnricherKernelTest, RunStatisticsWithCapture) {
  bpfprof::testing::TempDir dir;
  RecordOptions o;
  o.system_wide = true;
  o.duration_s = 1.5;
  o.bpf_stats = true;
  o.output = dir.file("stats.data");
  uint32_t id = 0;
  auto stats = record_while(o, [&] { id = load_and_run_twice(); });
  if (!stats.ok() && stats.error().code == Errc::kPermission) {
    BPFPROF_KERNEL_SKIP(stats.error().to_string());
  }
  ASSERT_TRUE(stats.ok()) << stats.error().to_string();
  ASSERT_NE(id, 0u) << "bpf_prog_load failed";
  ASSERT_TRUE(stats->enrichment.in_kernel) << stats->enrichment.capture_refused;
  auto reader = perfdata::FileReader::open(o.output);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  const perfdata::Features& f = reader->features();
  ASSERT_TRUE(f.run_stats.has_value()) << "feature 252";
  const ProgramRunStats* rs = nullptr;
  for (const auto& p : f.run_stats->programs) {
    if (p.id == id) rs = &p;
  }
  ASSERT_NE(rs, nullptr);
  EXPECT_TRUE(rs->has(ProgramRunStats::kLoadedDuring));
  EXPECT_TRUE(rs->measured());
  EXPECT_EQ(rs->run_cnt(), 2000u) << "the last poll came after both test runs";
}

TEST(EnricherKernelTest, OneThreadForAllCpus) {
  bpfprof::testing::TempDir dir;
  RecordOptions o;
  o.system_wide = true;
  o.duration_s = 0.6;
  o.enricher_per_cpu = false;
  o.enrich = EnrichMode::kUser;
  o.output = dir.file("one.data");
  uint32_t id = 0;
  auto stats = record_while(o, [&] {
    Program p;
    id = p.id;
    // This checks the layout, not the race: one unpinned thread may well be
    // late for a program that lives microseconds, so this one lives 100 ms.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  });
  if (!stats.ok() && stats.error().code == Errc::kPermission) {
    BPFPROF_KERNEL_SKIP(stats.error().to_string());
  }
  ASSERT_TRUE(stats.ok()) << stats.error().to_string();
  ASSERT_NE(id, 0u);
  EXPECT_EQ(stats->enrichment.threads, 1u);
  EXPECT_FALSE(stats->enrichment.pinned);
  auto reader = perfdata::FileReader::open(o.output);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  EXPECT_FALSE(reader->features().run_stats.has_value()) << "no --bpf-stats, no section";
  size_t stored = 0;
  for (const auto& p : reader->features().bpf_prog_info) stored += p.id() == id;
  EXPECT_EQ(stored, 1u);
}

}  // namespace
}  // namespace bpfprof::record
