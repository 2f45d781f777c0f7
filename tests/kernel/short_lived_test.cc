// SPDX-License-Identifier: Apache-2.0
// Short-lived programs while both CPUs are busy, recorded with --bpf-stats:
// the in-kernel capture (the default) stores the full info of every program
// of the truth, 100 us ones included, without holding any reference; the
// report's header names the enrichment path, and the kernel's run time of
// the long-lived program agrees with the sampled time.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "testing/paths.h"
#include "testing/recording_readback.h"
#include "testing/subprocess.h"
#include "testing/workload_recording.h"

namespace bpfprof::testing {
namespace {

const std::string kBin = BPFPROF_BIN_DIR;
constexpr int kFreq = 999;

struct Fixture : WorkloadRecording {
  Recording rec;
  nlohmann::json lifetimes;  // id -> nominal lifetime_ns, from the truth
};

class ShortLivedTest : public WorkloadRecordingTest<ShortLivedTest, Fixture> {
 protected:
  static void SetUpTestSuite() {
    g = new Fixture;
    // 40 programs per class on two loader threads, plus the long-lived
    // burner on a third: both CPUs stay busy.
    if (!g->record_workload(
            kBin,
            {.record_flags = {"-a", "-F", std::to_string(kFreq), "-q", "--bpf-stats"},
             .workload_args = {"--programs", "160", "--lifetime", "100us,400us,1ms,10ms",
                               "--subprog-programs", "0", "--long-lived", "1s", "--threads", "2"},
             .data_name = "short.data"})) {
      return;
    }
    g->rec = read_recording(g->data);
    for (const auto& p : g->truth_json.at("programs")) {
      g->lifetimes[std::to_string(p.at("id").get<uint32_t>())] = p.at("lifetime_ns");
    }
  }
  static bool full_info(const TruthProgram& p) {
    auto it = g->rec.prog_info.find(p.id);
    if (it == g->rec.prog_info.end()) return false;
    const bpf::ProgInfo& info = it->second;
    return !info.jited_insns.empty() && info.jited_ksyms.size() == p.functions.size() &&
           !info.line_info.empty() && !info.jited_line_info.empty() &&
           g->rec.btf_sizes.count(info.info.btf_id) == 1;
  }
};

TEST_F(ShortLivedTest, EveryProgramHasFullInfo) {
  std::map<uint64_t, std::pair<int, int>> classes;  // lifetime -> (stored, total)
  for (const auto& p : g->programs) {
    if (p.kind != "burner") continue;
    const uint64_t lifetime = g->lifetimes.at(std::to_string(p.id)).get<uint64_t>();
    auto& c = classes[lifetime];
    c.second++;
    if (full_info(p)) {
      c.first++;
    } else {
      ADD_FAILURE() << "program " << p.id << " of " << lifetime << " ns has no full info";
    }
  }
  ASSERT_EQ(classes.size(), 4u);
  EXPECT_EQ(classes[10'000'000].second, 40);
  for (const auto& [lifetime, c] : classes) {
    std::printf("short-lived: lifetime %6.1f ms: %d of %d programs have full stored info\n",
                static_cast<double>(lifetime) / 1e6, c.first, c.second);
  }
}

TEST_F(ShortLivedTest, ReportHeaderNamesTheEnrichmentPath) {
  RunResult text = run({kBin + "/bpfprof", "report", "-i", g->data, "--bpf-only"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("# enrichment: in-kernel capture at load, "), std::string::npos) << text.out;
  RunResult json = run({kBin + "/bpfprof", "report", "-i", g->data, "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json e = nlohmann::json::parse(json.out).at("enrichment");
  EXPECT_TRUE(e.at("path").get<std::string>().starts_with("in-kernel")) << e;
  // A load the capture did not report in time is enriched by id (holding a
  // reference); that takes a loader stalled for 100 ms inside the syscall.
  const uint64_t by_id = e.at("enriched_by_id").get<uint64_t>();
  EXPECT_GE(e.at("captured").get<uint64_t>() + by_id, g->programs.size()) << e;
  if (by_id == 0) {
    EXPECT_EQ(e.at("max_hold_ns").get<uint64_t>(), 0u) << e;
    EXPECT_NE(text.out.find("; no reference held"), std::string::npos) << text.out;
  }
  EXPECT_NE(text.out.find("# bpf stats: on"), std::string::npos);
  EXPECT_NE(text.out.find("ns/run"), std::string::npos);
}

TEST_F(ShortLivedTest, RunStatisticsAgreeWithSamplesForTheLongLivedProgram) {
  RunResult json = run({kBin + "/bpfprof", "report", "--instances", "-i", g->data, "--format",
                        "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  ASSERT_TRUE(j.contains("enrichment"));
  EXPECT_TRUE(j["enrichment"]["bpf_stats"].get<bool>());
  uint32_t long_id = 0;
  for (const auto& p : g->programs)
    if (p.kind == "long-lived") long_id = p.id;
  ASSERT_NE(long_id, 0u);
  const nlohmann::json* row = nullptr;
  for (const auto& p : j["programs"])
    if (p["id"] == long_id) row = &p;
  ASSERT_NE(row, nullptr);
  ASSERT_FALSE((*row)["run_cnt"].is_null()) << "polled while it ran";
  const uint64_t runs = (*row)["run_cnt"].get<uint64_t>();
  const double run_s = (*row)["run_time_ns"].get<double>() / 1e9;
  const double sampled_s = (*row)["samples"].get<double>() / kFreq;
  std::printf("long-lived: %llu runs, %.3f s measured by the kernel, %.3f s sampled\n",
              static_cast<unsigned long long>(runs), run_s, sampled_s);
  EXPECT_GT(runs, 0u);
  ASSERT_GT(sampled_s, 0.1);
  // The last poll comes up to ~100 ms before the unload; sampling is noisy.
  EXPECT_GT(run_s, sampled_s / 3);
  EXPECT_LT(run_s, sampled_s * 3);
}

}  // namespace
}  // namespace bpfprof::testing
