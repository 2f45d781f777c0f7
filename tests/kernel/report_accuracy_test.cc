// SPDX-License-Identifier: Apache-2.0
// Accuracy of time-correct BPF attribution against the workload's ground
// truth: short-lived programs, subprograms, and JIT ranges reused by later
// programs, recorded once by `bpfprof record` and once by Linux `perf record`
// (CLOCK_MONOTONIC, so the truth's times apply), each reported by bpfprof.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "testing/paths.h"
#include "testing/recording_readback.h"
#include "testing/subprocess.h"
#include "testing/workload_recording.h"

namespace bpfprof::testing {
namespace {

const std::string kBin = BPFPROF_BIN_DIR;

// One recording, by bpfprof or by perf, and what bpfprof reads back from it.
struct Case : WorkloadRecording {
  RunResult script, report;
};

struct Fixture {
  Case runs[2];  // recorded by bpfprof, then by Linux perf
};

class ReportAccuracyTest : public WorkloadRecordingTest<ReportAccuracyTest, Fixture>,
                           public ::testing::WithParamInterface<bool> {
 protected:
  static void SetUpTestSuite() {
    g = new Fixture;
    for (bool perf : {false, true}) {
      Case& c = g->runs[perf];
      WorkloadRun what;
      what.perf_record = perf;
      what.record_flags = {"-q", "-a", "-g", "-F", "4999"};
      // perf records CLOCK_MONOTONIC times too, so the truth's times apply.
      if (perf) {
        what.record_flags.insert(what.record_flags.end(),
                                 {"-e", "cpu-clock", "-k", "CLOCK_MONOTONIC"});
      }
      what.workload_args = {"--programs", "60", "--lifetime", "2ms,5ms,20ms,60ms",
                            "--subprog-programs", "6", "--long-lived", "500ms", "--threads", "2"};
      if (!c.record_workload(kBin, what)) return;
      c.script = run({kBin + "/bpfprof", "script", "-i", c.data, "--format", "json"});
      ASSERT_EQ(c.script.exit_code, 0) << c.script.err;
      c.report =
          run({kBin + "/bpfprof", "report", "--instances", "-i", c.data, "--format", "json"});
      ASSERT_EQ(c.report.exit_code, 0) << c.report.err;
    }
  }
  static Case& c() { return g->runs[GetParam()]; }
};

struct Sample {
  uint64_t time = 0, ip = 0;
  uint32_t prog = 0;  // bpf_prog_id, 0 = not BPF
};

std::vector<Sample> parse_script(const std::string& out) {
  std::vector<Sample> samples;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line);
    Sample s;
    s.time = j.at("time").get<uint64_t>();
    s.ip = std::stoull(j.at("ip").get<std::string>(), nullptr, 16);
    if (j.contains("bpf_prog_id")) s.prog = j.at("bpf_prog_id").get<uint32_t>();
    samples.push_back(s);
  }
  return samples;
}

// The truth program whose JIT range holds ip while it was alive (after its
// load returned, before its close): exactly one program can own an address
// at a time.
const TruthProgram* owner(const std::vector<TruthProgram>& programs, const Sample& s) {
  for (const auto& p : programs) {
    if (s.time < p.load_ns || s.time > p.unload_ns) continue;
    for (const auto& f : p.functions)
      if (s.ip >= f.addr && s.ip < f.addr + f.len) return &p;
  }
  return nullptr;
}

TEST_P(ReportAccuracyTest, SamplesInAProgramsRangeNameThatProgram) {
  auto samples = parse_script(c().script.out);
  ASSERT_FALSE(samples.empty());
  size_t in_range = 0, right = 0;
  std::map<uint32_t, size_t> wrong_by;
  for (const auto& s : samples) {
    const TruthProgram* p = owner(c().programs, s);
    if (!p) continue;
    in_range++;
    if (s.prog == p->id) right++;
    else wrong_by[s.prog]++;
  }
  std::printf("%s: %zu samples, %zu inside a workload program's range while alive, %zu (%.3f%%) "
              "attributed to that program\n",
              GetParam() ? "perf record" : "bpfprof record", samples.size(), in_range, right,
              in_range ? 100.0 * right / in_range : 0.0);
  ASSERT_GE(in_range, 500u) << "the workload burned well over a second in BPF at 4999 Hz";
  EXPECT_GE(right * 1000, in_range * 995) << "fewer than 99.5% attributed correctly";
}

TEST_P(ReportAccuracyTest, NoSampleNamesAProgramThatWasNotAlive) {
  std::map<uint32_t, const TruthProgram*> by_id;
  for (const auto& p : c().programs) by_id[p.id] = &p;
  // Read from the truth file of the held-open range: a program exists from
  // inside its load call (KSYMBOL comes before load_ns) to its close.
  size_t checked = 0;
  for (const auto& s : parse_script(c().script.out)) {
    auto it = by_id.find(s.prog);
    if (it == by_id.end()) continue;
    const TruthProgram& p = *it->second;
    checked++;
    EXPECT_GE(s.time + p.load_duration_ns, p.load_ns) << "sample before program " << p.id << " loaded";
    EXPECT_LE(s.time, p.unload_ns) << "sample after program " << p.id << " was closed";
  }
  EXPECT_GT(checked, 0u);
}

TEST_P(ReportAccuracyTest, EveryProgramWithTenSamplesIsInTheReport) {
  auto report = nlohmann::json::parse(c().report.out);
  std::map<uint32_t, uint64_t> reported;
  for (const auto& p : report.at("programs")) reported[p.at("id").get<uint32_t>()] = p.at("samples").get<uint64_t>();
  std::map<uint32_t, size_t> in_range;
  for (const auto& s : parse_script(c().script.out))
    if (const TruthProgram* p = owner(c().programs, s)) in_range[p->id]++;
  size_t programs = 0;
  for (const auto& [id, n] : in_range) {
    if (n < 10) continue;
    programs++;
    ASSERT_EQ(reported.count(id), 1u) << "program " << id << " with " << n << " samples missing";
    EXPECT_GE(reported[id] + reported[id] / 100 + 1, n) << "program " << id;
  }
  EXPECT_GE(programs, 5u);
}

TEST_P(ReportAccuracyTest, UnloadDelayAfterTheWorkloadsClose) {
  // A recorder that holds a program (to read its info) delays its unload past
  // the workload's own close; measured for both recorders on the same workload.
  Recording rec = read_recording(c().data);
  std::map<uint32_t, uint64_t> unload_time;
  for (const auto& b : rec.bpf_events)
    if (b.type == 2) unload_time[b.id] = b.time;
  std::vector<int64_t> delays;
  for (const auto& p : c().programs) {
    auto it = unload_time.find(p.id);
    ASSERT_NE(it, unload_time.end()) << "no PROG_UNLOAD for program " << p.id;
    delays.push_back(static_cast<int64_t>(it->second) - static_cast<int64_t>(p.unload_ns));
  }
  std::sort(delays.begin(), delays.end());
  size_t delayed = std::count_if(delays.begin(), delays.end(), [](int64_t d) { return d > 0; });
  std::printf("%s: unload after the workload's close: median %+lld us, max %+lld us; %zu of %zu "
              "programs unloaded later than their close\n",
              GetParam() ? "perf record" : "bpfprof record",
              static_cast<long long>(delays[delays.size() / 2] / 1000),
              static_cast<long long>(delays.back() / 1000), delayed, delays.size());
  EXPECT_LT(delays.back(), 1'000'000'000) << "a program was held for over a second";
}

TEST_P(ReportAccuracyTest, SomeJitRangesWereReused) {
  // Ranges overlapping an earlier program's: the case time-correct lookup is for.
  size_t reused = 0;
  const auto& ps = c().programs;
  for (size_t i = 0; i < ps.size(); i++)
    for (size_t j = 0; j < i; j++)
      for (const auto& a : ps[i].functions)
        for (const auto& b : ps[j].functions)
          if (a.addr < b.addr + b.len && b.addr < a.addr + a.len) reused++;
  std::printf("%zu function ranges overlap an earlier program's\n", reused);
  EXPECT_GT(reused, 0u);
}

// Who pays: every workload program, loaded during the recording, is owned by
// the workload's process and the thread that loaded it (its BPF_EVENT names
// the loader), as the truth file says — in perf's recordings too — and the
// owner line adds up.
TEST_P(ReportAccuracyTest, WorkloadProgramsAreOwnedByTheWorkload) {
  std::ifstream in(c().truth);
  const auto truth = nlohmann::json::parse(in);
  const auto pid = truth.at("pid").get<uint32_t>();
  std::map<uint32_t, uint32_t> tid_of;  // program id -> the thread that loaded it
  for (const auto& p : c().programs) tid_of[p.id] = p.load_tid;
  const auto report = nlohmann::json::parse(c().report.out);
  size_t checked = 0, other_threads = 0;
  uint64_t workload_samples = 0;
  for (const auto& p : report.at("programs")) {
    auto truth_tid = tid_of.find(p.at("id").get<uint32_t>());
    if (truth_tid == tid_of.end()) continue;
    checked++;
    EXPECT_EQ(p.at("owner_pids"), nlohmann::json::array({pid})) << p.dump();
    ASSERT_NE(truth_tid->second, 0u);
    EXPECT_EQ(p.at("owner_tids"), nlohmann::json::array({truth_tid->second})) << p.dump();
    other_threads += truth_tid->second != pid;
    EXPECT_TRUE(p.at("owner").get<std::string>().ends_with("[" + std::to_string(pid) + "]"))
        << p.dump();
    // The owner line counts what its programs cost: their totals.
    workload_samples += p.at("total_samples").get<uint64_t>();
  }
  EXPECT_EQ(checked, tid_of.size());
  EXPECT_GT(other_threads, 0u) << "--threads 2: loads from threads other than the main one";
  uint64_t owned = 0;
  for (const auto& o : report.at("owners")) {
    if (o.at("owner").get<std::string>().ends_with("[" + std::to_string(pid) + "]")) {
      owned += o.at("samples").get<uint64_t>();
    }
  }
  EXPECT_EQ(owned, workload_samples);
  // script --format json names the same owner on each BPF leaf sample.
  size_t lines = 0;
  std::istringstream script(c().script.out);
  for (std::string line; std::getline(script, line);) {
    const auto j = nlohmann::json::parse(line);
    if (!j.contains("bpf_prog_id") || !tid_of.count(j.at("bpf_prog_id").get<uint32_t>())) continue;
    lines++;
    EXPECT_TRUE(j.at("owner").get<std::string>().ends_with("[" + std::to_string(pid) + "]"))
        << line;
  }
  EXPECT_GT(lines, 0u);
}

INSTANTIATE_TEST_SUITE_P(Recorders, ReportAccuracyTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "PerfRecord" : "BpfprofRecord"; });

}  // namespace
}  // namespace bpfprof::testing
