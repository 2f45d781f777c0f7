// SPDX-License-Identifier: Apache-2.0
// The enrichment header line and the run-statistics columns/fields, from
// hand-built feature sections 251 and 252.
#include "analysis/enrichment.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "report/render.h"

namespace bpfprof::report {
namespace {

using perfdata::EnrichedProgramEntry;
using perfdata::ProgramRunStats;

class EnrichmentRenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    d_.header.start_ns = 1'000'000'000;
    d_.header.end_ns = 2'000'000'000;
    d_.programs.push_back(analysis::ProgramRow{42, "burn", "0011223344556677", 1'100'000'000,
                                               1'900'000'000, 6,
                                               {{"bpf_prog_0011223344556677_burn", 6}}});
    d_.programs.push_back(analysis::ProgramRow{43, "short", "8899aabbccddeeff", 1'200'000'000,
                                               1'200'500'000, 0,
                                               {{"bpf_prog_8899aabbccddeeff_short", 0}}});
    perfdata::EnrichmentSection e;
    e.sched = perfdata::EnricherSched::kFifo;
    e.in_kernel_errno = EPERM;
    e.version = 1;  // a file from before the in-kernel capture
    e.programs = {{42, EnrichedProgramEntry::kStored, 1'100'000'000, 1'100'020'000, 40'000},
                  {43, EnrichedProgramEntry::kStored, 1'200'000'000, 1'200'010'000, 20'000},
                  {44, EnrichedProgramEntry::kGone, 1'300'000'000, 1'300'010'000, 0}};
    f_.enrichment = e;
  }
  void with_stats() {
    perfdata::RunStatsSection s;
    s.poll_interval_ns = 100'000'000;
    s.programs = {{42, ProgramRunStats::kLoadedDuring, 1'100'030'000, 0, 0, 1'800'000'000, 1000, 7'000'000},
                  // Read at load only: nothing measured.
                  {43, ProgramRunStats::kLoadedDuring, 1'200'020'000, 0, 0, 1'200'020'000, 0, 0}};
    f_.run_stats = s;
  }
  analysis::ReportData d_;
  perfdata::Features f_;
};

TEST_F(EnrichmentRenderTest, HeaderSaysPathAndCountsWithoutStatsColumns) {
  analysis::add_enrichment(f_, d_);
  const std::string text = render_text(d_, {});
  EXPECT_NE(text.find("# enrichment: user-space enricher (SCHED_FIFO), 2 of 3 programs stored, 1 "
                      "gone before enrichment; in-kernel path refused (EPERM)\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("# bpf stats"), std::string::npos);
  EXPECT_EQ(text.find("ns/run"), std::string::npos);
  auto j = nlohmann::json::parse(render_json(d_, {}));
  EXPECT_EQ(j["enrichment"]["stored"], 2);
  EXPECT_EQ(j["enrichment"]["gone"], 1);
  EXPECT_EQ(j["enrichment"]["in_kernel"], "refused (EPERM)");
  EXPECT_EQ(j["enrichment"]["bpf_stats"], false);
  EXPECT_FALSE(j["programs"][0].contains("run_cnt"));
}

// The in-kernel capture served the recording: the line says so, with the
// programs captured and those enriched by id, and whether a reference was held.
TEST_F(EnrichmentRenderTest, InKernelCapturePath) {
  perfdata::EnrichmentSection& e = *f_.enrichment;
  e.version = 2;
  e.path = perfdata::EnrichmentPath::kInKernel;
  e.in_kernel_errno = 0;
  e.programs = {{42, EnrichedProgramEntry::kStored | EnrichedProgramEntry::kCaptured, 1'100'000'000, 0, 0},
                {43, EnrichedProgramEntry::kStored | EnrichedProgramEntry::kCaptured, 1'200'000'000, 0, 0},
                {44, EnrichedProgramEntry::kGone | EnrichedProgramEntry::kById, 1'300'000'000, 1'400'000'000, 0}};
  analysis::add_enrichment(f_, d_);
  std::string text = render_text(d_, {});
  EXPECT_NE(text.find("# enrichment: in-kernel capture at load, 2 of 3 programs stored (2 captured "
                      "at load, 0 enriched by id), 1 gone before enrichment; no reference held\n"),
            std::string::npos)
      << text;
  auto j = nlohmann::json::parse(render_json(d_, {}));
  EXPECT_EQ(j["enrichment"]["path"], "in-kernel capture at load");
  EXPECT_EQ(j["enrichment"]["in_kernel"], "used");
  EXPECT_EQ(j["enrichment"]["captured"], 2);
  EXPECT_EQ(j["enrichment"]["enriched_by_id"], 0);
  EXPECT_EQ(j["enrichment"]["max_hold_ns"], 0);

  // One enriched by id after a full capture ring: counted, with its hold.
  e.programs[1] = {43, EnrichedProgramEntry::kStored | EnrichedProgramEntry::kById, 1'200'000'000,
                   1'200'010'000, 30'000};
  e.capture_lost = 5;
  d_.enrichment.reset();
  analysis::add_enrichment(f_, d_);
  text = render_text(d_, {});
  EXPECT_NE(text.find("(1 captured at load, 1 enriched by id), 1 gone before enrichment, capture "
                      "ring full 5 times; references held up to 30 \u00b5s\n"),
            std::string::npos)
      << text;
}

// The user-space enricher ran because the capture could not: the line says why.
TEST_F(EnrichmentRenderTest, UserSpacePathSaysWhyCaptureDidNotRun) {
  perfdata::EnrichmentSection& e = *f_.enrichment;
  e.version = 2;
  e.capture_refused = "loading the capture programs: Operation not permitted";
  analysis::add_enrichment(f_, d_);
  const std::string text = render_text(d_, {});
  EXPECT_NE(text.find("# enrichment: user-space enricher (SCHED_FIFO), 2 of 3 programs stored, 1 "
                      "gone before enrichment; in-kernel capture not used: loading the capture "
                      "programs: Operation not permitted\n"),
            std::string::npos)
      << text;
  auto j = nlohmann::json::parse(render_json(d_, {}));
  EXPECT_EQ(j["enrichment"]["in_kernel"],
            "not used: loading the capture programs: Operation not permitted");
}

TEST_F(EnrichmentRenderTest, RunStatisticsBesideTheSampledShare) {
  with_stats();
  analysis::add_enrichment(f_, d_);
  const std::string text = render_text(d_, {});
  EXPECT_NE(text.find("# bpf stats: on"), std::string::npos) << text;
  EXPECT_NE(text.find("Runs  Run ms  ns/run"), std::string::npos) << text;
  EXPECT_NE(text.find("1000   7.000    7000"), std::string::npos) << text;
  auto j = nlohmann::json::parse(render_json(d_, {}));
  const auto& burn = j["programs"][0];
  EXPECT_EQ(burn["ids"], nlohmann::json::array({42}));
  EXPECT_EQ(burn["run_cnt"], 1000);
  EXPECT_EQ(burn["run_time_ns"], 7'000'000);
  EXPECT_EQ(burn["avg_ns"], 7000);
  const auto& short_lived = j["programs"][1];
  EXPECT_TRUE(short_lived["run_cnt"].is_null()) << "unloaded before any poll";
  EXPECT_TRUE(short_lived["avg_ns"].is_null());
}

TEST_F(EnrichmentRenderTest, PerfFilesHaveNeither) {
  analysis::add_enrichment(perfdata::Features{}, d_);
  EXPECT_FALSE(d_.enrichment.has_value());
  EXPECT_EQ(render_text(d_, {}).find("# enrichment"), std::string::npos);
  EXPECT_FALSE(nlohmann::json::parse(render_json(d_, {})).contains("enrichment"));
}

}  // namespace
}  // namespace bpfprof::report
