// SPDX-License-Identifier: Apache-2.0
// Real-kernel test of the recorder in-process: record `sleep 0.3` system-wide
// and read the file back, with our reader and with Linux perf.
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include <gtest/gtest.h>

#include "perf/records.h"
#include "perfdata/kallsyms_table.h"
#include "perfdata/reader.h"
#include "record/recorder.h"
#include "testing/subprocess.h"

namespace bpfprof::record {
namespace {

struct Seen {
  size_t samples = 0;
  bool kernel_mmap = false;
  uint64_t kernel_start = 0;  // the kernel MMAP's start
  bool own_comm = false;
  bool finished_init = false;
  size_t records_before_init_with_time = 0;
};

TEST(RecorderKernelTest, RecordsSleepSystemWide) {
  bpfprof::testing::TempDir dir;
  RecordOptions o;
  o.system_wide = true;
  o.callchain = true;
  o.command = {"sleep", "0.3"};
  o.output = dir.file("sleep.data");
  o.cmdline = {"bpfprof", "record", "-a", "-g", "--", "sleep", "0.3"};
  std::vector<std::string> notices;
  RecordSink sink;
  sink.notice = [&](std::string_view n) { notices.emplace_back(n); };
  auto stats = record(o, sink);
  if (!stats.ok() && stats.error().code == Errc::kPermission) {
    BPFPROF_KERNEL_SKIP(stats.error().to_string());
  }
  ASSERT_TRUE(stats.ok()) << stats.error().to_string();
  EXPECT_EQ(stats->stop_reason, StopReason::kWorkloadExited);
  ASSERT_TRUE(stats->workload_status.has_value());
  EXPECT_EQ(*stats->workload_status, 0);
  EXPECT_GT(stats->samples, 0u);
  EXPECT_GT(stats->file_bytes, 0u);

  auto reader = perfdata::FileReader::open(o.output);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  ASSERT_EQ(reader->attrs().size(), 2u);
  for (const auto& a : reader->attrs()) {
    EXPECT_FALSE(a.ids.empty()) << a.name;
    EXPECT_TRUE(a.attr.sample_type & PERF_SAMPLE_IDENTIFIER);
  }
  EXPECT_EQ(reader->attrs()[0].attr.sample_type, reader->attrs()[1].attr.sample_type);
  EXPECT_TRUE(reader->attrs()[1].attr.bpf_event);
  EXPECT_TRUE(reader->attrs()[1].attr.ksymbol);

  Seen seen;
  const auto own_pid = static_cast<uint32_t>(::getpid());
  auto status = reader->for_each_record([&](const perf::RecordView& r, uint64_t) {
    const perfdata::FileAttr* attr = reader->attr_for(r);
    ASSERT_NE(attr, nullptr) << "record type " << r.header.type;
    switch (r.header.type) {
      case perf::kRecordSample:
        seen.samples++;
        break;
      case perf::kRecordMmap: {
        auto m = perf::Mmap::parse(r, attr->layout);
        ASSERT_TRUE(m.ok());
        if (m->filename.starts_with("[kernel.kallsyms]") && m->sample_id.time == 0 &&
            r.cpumode() == perf::kMiscKernel) {
          seen.kernel_mmap = true;
          seen.kernel_start = m->start;
          EXPECT_GT(m->len, 0u);
          EXPECT_EQ(m->pgoff, m->start);
        }
        break;
      }
      case perf::kRecordComm: {
        auto c = perf::Comm::parse(r, attr->layout);
        ASSERT_TRUE(c.ok());
        if (c->pid == own_pid && c->tid == own_pid && c->sample_id.time == 0) seen.own_comm = true;
        break;
      }
      case perf::kRecordFinishedInit:
        seen.finished_init = true;
        break;
      default:
        if (!seen.finished_init && r.header.type < 64 &&
            attr->layout.time_of(r).value_or(0) != 0) {
          seen.records_before_init_with_time++;
        }
        break;
    }
  });
  ASSERT_TRUE(status.ok()) << status.error().to_string();
  EXPECT_TRUE(seen.kernel_mmap);
  EXPECT_TRUE(seen.own_comm);
  EXPECT_TRUE(seen.finished_init);
  EXPECT_EQ(seen.records_before_init_with_time, 0u) << "only synthesized records before FINISHED_INIT";
  EXPECT_GT(seen.samples, 0u);
  EXPECT_EQ(seen.samples, stats->samples);
  EXPECT_TRUE(reader->features().first_sample_time.has_value());
  EXPECT_FALSE(reader->features().cmdline.empty());

  // The kallsyms snapshot (feature 250) is in the file as a table, and perf
  // still reads the file.
  const perfdata::Features& f = reader->features();
  ASSERT_FALSE(f.kallsyms_packed.empty()) << "snapshot missing";
  auto kallsyms = perfdata::KallsymsTable::open(f.kallsyms_packed, f.kallsyms_packed_at);
  ASSERT_TRUE(kallsyms.ok()) << kallsyms.error().to_string();
  EXPECT_GT(kallsyms->size(), 1000u);
  // A core kernel symbol starts where the kernel map does (_text, or an
  // alias of it), and no [bpf] line was kept.
  const size_t at_text = kallsyms->floor(seen.kernel_start);
  ASSERT_LT(at_text, kallsyms->size());
  EXPECT_EQ(kallsyms->addr(at_text), seen.kernel_start);
  EXPECT_EQ(kallsyms->module(at_text), 0u);
  bool bpf = false;
  size_t unnamed = 0;
  for (size_t i = 0; i < kallsyms->size(); i++) {
    bpf |= kallsyms->module(i) != 0 && kallsyms->module_dso(kallsyms->module(i)) == "[bpf]";
    unnamed += kallsyms->name(i).empty();
  }
  EXPECT_FALSE(bpf);
  // Version 5: the table in blocks, every one of which decompresses.
  EXPECT_EQ(load_unaligned<uint32_t>(f.kallsyms_packed.data()), 5u);
  EXPECT_EQ(unnamed, 0u);
  EXPECT_GT(kallsyms->blocks_decoded(), 1u);
  EXPECT_FALSE(kallsyms->damage().has_value()) << kallsyms->damage()->to_string();
  EXPECT_TRUE(reader->feature_errors().empty());

  auto script = bpfprof::testing::run({"perf", "script", "-i", o.output});
  EXPECT_EQ(script.exit_code, 0) << script.err;
  EXPECT_EQ(script.err, "");
  EXPECT_FALSE(script.out.empty());
  auto header = bpfprof::testing::run({"perf", "report", "-i", o.output, "--header-only"});
  EXPECT_EQ(header.exit_code, 0) << header.err;
  EXPECT_EQ(header.err, "");
  EXPECT_NE(header.out.find("# hostname"), std::string::npos);
}

// Passes cut the sampling rings at one time, so the rounds' samples do not
// overlap in time: every sample of a round is newer than every sample of the
// rounds before it. Small rings at a high rate make many passes (wakes)
// while both CPUs are busy. Copied ring after ring without the cut, half of
// the rounds (12-14 of 24 here) reached back into the one before; a sample
// the kernel writes more than the cut's lag after stamping it (a preempted
// vCPU) still may (0-1 of 24), so an eighth is allowed.
TEST(RecorderKernelTest, RoundsOfSamplesAreDisjointInTime) {
  bpfprof::testing::TempDir dir;
  RecordOptions o;
  o.system_wide = true;
  o.callchain = true;
  o.frequency = 20000;
  o.mmap_pages = 128;
  // Both CPUs busy: with one, a single ring holds the samples.
  o.command = {"sh", "-c",
               "spin() { i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done; }; spin & spin; wait"};
  o.output = dir.file("rounds.data");
  o.cmdline = {"bpfprof", "record", "-a", "-g", "-F", "20000", "-m", "128"};
  auto stats = record(o, RecordSink{});
  if (!stats.ok() && stats.error().code == Errc::kPermission) {
    BPFPROF_KERNEL_SKIP(stats.error().to_string());
  }
  ASSERT_TRUE(stats.ok()) << stats.error().to_string();
  auto reader = perfdata::FileReader::open(o.output);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();

  struct Span {
    uint64_t min = UINT64_MAX, max = 0;
  };
  std::vector<Span> rounds(1);
  auto status = reader->for_each_record([&](const perf::RecordView& r, uint64_t) {
    if (r.header.type == perf::kRecordFinishedRound) {
      if (rounds.back().min != UINT64_MAX) rounds.emplace_back();
      return;
    }
    if (r.header.type != perf::kRecordSample) return;
    const perfdata::FileAttr* attr = reader->attr_for(r);
    ASSERT_NE(attr, nullptr);
    const std::optional<uint64_t> t = attr->layout.time_of(r);
    ASSERT_TRUE(t.has_value());
    rounds.back().min = std::min(rounds.back().min, *t);
    rounds.back().max = std::max(rounds.back().max, *t);
  });
  ASSERT_TRUE(status.ok()) << status.error().to_string();
  if (rounds.back().min == UINT64_MAX) rounds.pop_back();
  ASSERT_GE(rounds.size(), 10u) << "too few rounds to tell";
  size_t overlapping = 0;
  uint64_t newest = 0;
  for (const Span& s : rounds) {
    if (s.min < newest) overlapping++;
    newest = std::max(newest, s.max);
  }
  EXPECT_LE(overlapping * 8, rounds.size())
      << overlapping << " of " << rounds.size() << " rounds reach back into an earlier one";
}

off_t file_size(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : 0;
}

// The user-space enricher's figures (--enrich=user) for a program loaded while recording: a reference
// taken and dropped (its hold time), the info stored.
TEST(RecorderKernelTest, EnrichmentStatsForAProgramLoadedDuringRecording) {
  bpfprof::testing::TempDir dir;
  RecordOptions o;
  o.system_wide = true;
  o.duration_s = 1.0;
  o.enrich = EnrichMode::kUser;  // the reference path (capture: capture_kernel_test.cc)
  o.output = dir.file("enrich.data");
  Result<RecordStats> stats = make_error(Errc::kInternal, "not run");
  std::thread recorder([&] { stats = record(o, {}); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (file_size(o.output) < 4096 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  bpf_insn prog[2] = {};
  prog[0].code = BPF_ALU64 | BPF_MOV | BPF_K;  // r0 = 0
  prog[1].code = BPF_JMP | BPF_EXIT;
  int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "bpfprof_en", "GPL", prog, 2, nullptr);
  uint32_t id = 0;
  if (fd >= 0) {
    bpf_prog_info info{};
    uint32_t len = sizeof info;
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0) id = info.id;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ::close(fd);
  }
  recorder.join();
  if (!stats.ok() && stats.error().code == Errc::kPermission) {
    BPFPROF_KERNEL_SKIP(stats.error().to_string());
  }
  ASSERT_TRUE(stats.ok()) << stats.error().to_string();
  ASSERT_GE(fd, 0) << "bpf_prog_load: " << std::strerror(-fd);
  EXPECT_EQ(stats->stop_reason, StopReason::kDuration);
  const EnrichedProgram* seen = nullptr;
  for (const EnrichedProgram& p : stats->enrichment.programs) {
    if (p.id == id) seen = &p;
  }
  ASSERT_NE(seen, nullptr) << "the enricher saw PROG_LOAD of " << id;
  EXPECT_TRUE(seen->enriched);
  EXPECT_FALSE(seen->gone);
  EXPECT_GT(seen->load_time_ns, 0u);
  EXPECT_GE(seen->acquired_ns, seen->load_time_ns) << "same clock (CLOCK_MONOTONIC)";
  EXPECT_GT(seen->released_ns, seen->acquired_ns);
  EXPECT_LT(seen->hold_ns(), 50'000'000u) << "the reference is dropped at once";
  EXPECT_GE(stats->bpf_loaded_live, 1u);
  EXPECT_GE(stats->bpf_enriched, 1u);
  EXPECT_GT(stats->enrichment.max_hold_ns(), 0u);

  auto reader = perfdata::FileReader::open(o.output);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  size_t entries = 0;
  for (const auto& p : reader->features().bpf_prog_info) entries += p.id() == id;
  EXPECT_EQ(entries, 1u) << "one BPF_PROG_INFO entry per id";
}

// -p: the threads of an existing process, ending when it exits.
TEST(RecorderKernelTest, FollowsAnExistingProcess) {
  bpfprof::testing::TempDir dir;
  // The target burns CPU until the recording has samples of it (a byte on a
  // pipe, or the pipe closing), however long the recorder takes to start on
  // a busy machine.
  int stop[2];
  ASSERT_EQ(::pipe(stop), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(stop[1]);
    ::fcntl(stop[0], F_SETFL, O_NONBLOCK);
    const auto cap = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    volatile uint64_t x = 0;
    char byte = 0;
    while (std::chrono::steady_clock::now() < cap && ::read(stop[0], &byte, 1) < 0) {
      for (int i = 0; i < 1000000; i++) x = x + 1;
    }
    ::_exit(0);
  }
  ::close(stop[0]);
  RecordOptions o;
  o.pid = child;
  o.duration_s = 10;
  o.output = dir.file("pid.data");
  RecordSink sink;
  bool told = false;
  sink.progress = [&](const Progress& p) {
    if (!told && p.samples >= 20) {
      told = true;
      // If the byte cannot be written, closing the pipe below ends the child.
      [[maybe_unused]] const ssize_t n = ::write(stop[1], "x", 1);
    }
  };
  auto stats = record(o, sink);
  ::close(stop[1]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!stats.ok() && stats.error().code == Errc::kPermission) {
    BPFPROF_KERNEL_SKIP(stats.error().to_string());
  }
  ASSERT_TRUE(stats.ok()) << stats.error().to_string();
  EXPECT_EQ(stats->stop_reason, StopReason::kTargetExited);
  EXPECT_GT(stats->samples, 0u);
  auto reader = perfdata::FileReader::open(o.output);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  size_t foreign = 0, ours = 0;
  auto st = reader->for_each_record([&](const perf::RecordView& r, uint64_t) {
    if (r.header.type != perf::kRecordSample) return;
    auto s = perf::Sample::parse(r, reader->attr_for(r)->layout);
    ASSERT_TRUE(s.ok());
    (s->pid == static_cast<uint32_t>(child) ? ours : foreign)++;
  });
  ASSERT_TRUE(st.ok());
  EXPECT_GT(ours, 0u);
  EXPECT_EQ(foreign, 0u) << "only the target's threads are sampled";
}

TEST(RecorderKernelTest, UnknownEventIsRefusedBeforeAnythingIsWritten) {
  bpfprof::testing::TempDir dir;
  RecordOptions o;
  o.system_wide = true;
  o.event = "no-such-event";
  o.output = dir.file("x.data");
  auto stats = record(o, {});
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.error().code, Errc::kInvalidArgument);
  EXPECT_NE(stats.error().message.find("cpu-clock"), std::string::npos) << stats.error().message;
  EXPECT_NE(::access(o.output.c_str(), F_OK), 0) << "nothing left behind";
}

TEST(RecorderKernelTest, OldOutputIsKeptWhenTheCommandCannotStart) {
  bpfprof::testing::TempDir dir;
  RecordOptions o;
  o.system_wide = true;
  o.command = {"/nonexistent/command"};
  o.output = dir.file("perf.data");
  FILE* f = std::fopen(o.output.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("old", f);
  std::fclose(f);
  auto stats = record(o, {});
  if (!stats.ok() && stats.error().code == Errc::kPermission) {
    BPFPROF_KERNEL_SKIP(stats.error().to_string());
  }
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.error().message.find("/nonexistent/command"), std::string::npos);
  char buf[8] = {};
  f = std::fopen(o.output.c_str(), "r");
  ASSERT_NE(f, nullptr) << "the old file is back";
  EXPECT_EQ(std::fread(buf, 1, sizeof buf, f), 3u);
  std::fclose(f);
  EXPECT_STREQ(buf, "old");
  EXPECT_NE(::access((o.output + ".old").c_str(), F_OK), 0);
}

}  // namespace
}  // namespace bpfprof::record
