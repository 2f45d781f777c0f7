// SPDX-License-Identifier: Apache-2.0
#include "compare/diff.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "compare/merge.h"

namespace bpfprof::compare {
namespace {

using profile::FrameKind;

// `burn` samples in program `id`, plus `other` samples in a kernel function.
analysis::ReportData make(uint32_t id, int burn, int other) {
  analysis::ReportData d;
  d.programs.push_back(analysis::ProgramRow{id, "burn", "0011223344556677", 0, std::nullopt,
                                  static_cast<uint64_t>(burn),
                                  {{"bpf_prog_0011223344556677_burn"}}});
  auto& p = d.profile;
  auto b = p.add_frame({"bpf_prog_0011223344556677_burn", "[bpf]", "", FrameKind::kBpf, 1, 0});
  auto k = p.add_frame({"memcpy", "[kernel.kallsyms]", "", FrameKind::kKernel});
  for (int i = 0; i < burn; i++) p.add_sample(p.add_stack({b}), {1, 1, "w"}, 1, 1);
  for (int i = 0; i < other; i++) p.add_sample(p.add_stack({k}), {1, 1, "w"}, 1, 1);
  return d;
}

TEST(Diff, ProgramsByNameAndTagSymbolsBySymbolAndDso) {
  analysis::ReportData before = make(10, 10, 30), after = make(77, 30, 10);
  // A second instance of the same program in the new recording counts with the first.
  after.programs.push_back(after.programs[0]);
  after.programs[1].id = 78;
  after.programs[1].samples = 5;
  // A program only in the old recording.
  before.programs.push_back(
      analysis::ProgramRow{11, "gone", "ffffffffffffffff", 0, std::nullopt, 2, {}});
  Diff d = diff_reports(before, after);
  EXPECT_EQ(d.before_total, 40u);
  EXPECT_EQ(d.after_total, 40u);
  ASSERT_EQ(d.programs.size(), 2u);
  EXPECT_EQ(d.programs[0].name, "burn");
  EXPECT_EQ(d.programs[0].detail, "0011223344556677");
  EXPECT_EQ(d.programs[0].before, 10u);
  EXPECT_EQ(d.programs[0].after, 35u);
  EXPECT_EQ(d.programs[0].delta(), 25);
  EXPECT_DOUBLE_EQ(d.programs[0].before_percent, 25.0);
  EXPECT_DOUBLE_EQ(d.programs[0].after_percent, 87.5);
  EXPECT_DOUBLE_EQ(d.programs[0].delta_percent(), 62.5);
  EXPECT_EQ(d.programs[1].name, "gone");
  EXPECT_EQ(d.programs[1].delta(), -2);

  ASSERT_EQ(d.symbols.size(), 2u);
  // |+20| and |-20| tie: name order decides, stably.
  EXPECT_EQ(d.symbols[0].name, "bpf_prog_0011223344556677_burn");
  EXPECT_EQ(d.symbols[0].delta(), 20);
  EXPECT_EQ(d.symbols[1].name, "memcpy");
  EXPECT_EQ(d.symbols[1].detail, "[kernel.kallsyms]");
  EXPECT_EQ(d.symbols[1].delta(), -20);
}

TEST(DiffGate, ShareGrowthByNameAndTagElseByName) {
  analysis::ReportData before = make(10, 10, 30), after = make(77, 30, 10);  // burn: 25% -> 75%
  // A rebuilt program: new tag, same name, matched by name (5% -> 12.5%).
  before.programs.push_back(
      analysis::ProgramRow{11, "cni", "aaaaaaaaaaaaaaaa", 0, std::nullopt, 2, {}});
  after.programs.push_back(
      analysis::ProgramRow{12, "cni", "bbbbbbbbbbbbbbbb", 0, std::nullopt, 5, {}});
  Diff d = diff_reports(before, after, GateOptions{5.0, std::nullopt});
  ASSERT_EQ(d.offenders.size(), 2u);
  EXPECT_EQ(d.offenders[0].name, "burn");
  EXPECT_EQ(d.offenders[0].tag, "0011223344556677");
  EXPECT_DOUBLE_EQ(d.offenders[0].growth(), 50.0);
  EXPECT_EQ(d.offenders[1].name, "cni");
  EXPECT_EQ(d.offenders[1].tag, "");
  EXPECT_DOUBLE_EQ(d.offenders[1].before, 5.0);
  EXPECT_DOUBLE_EQ(d.offenders[1].after, 12.5);
  EXPECT_EQ(diff_reports(before, after, GateOptions{50.0, std::nullopt}).offenders.size(), 0u);
  EXPECT_TRUE(diff_reports(before, after).offenders.empty());
  // Shrinking never offends.
  EXPECT_TRUE(diff_reports(after, before, GateOptions{0.0, std::nullopt}).offenders.empty());
  const auto j = nlohmann::json::parse(render_diff_json(d));
  ASSERT_EQ(j["gate"]["offenders"].size(), 2u);
  EXPECT_EQ(j["gate"]["offenders"][1]["tag"], nullptr);
  EXPECT_EQ(j["gate"]["fail_above"], 5.0);
  EXPECT_NE(render_diff_text(d).find("# Gate: --fail-above 5 (points of share); 2 offenders"),
            std::string::npos);
}

TEST(DiffGate, NsPerRunOnlyWhereBothMeasured) {
  analysis::ReportData before = make(10, 10, 30), after = make(77, 10, 30);
  before.programs[0].run_cnt = 100;
  before.programs[0].run_time_ns = 10000;  // 100 ns per run
  after.programs[0].run_cnt = 100;
  after.programs[0].run_time_ns = 25000;  // 250
  Diff d = diff_reports(before, after, GateOptions{std::nullopt, 100.0});
  ASSERT_EQ(d.offenders.size(), 1u);
  EXPECT_FALSE(d.offenders[0].by_share);
  EXPECT_DOUBLE_EQ(d.offenders[0].growth(), 150.0);
  EXPECT_EQ(render_offender(d.offenders[0]),
            "burn (tag 0011223344556677): 100 -> 250 ns per run (+150 ns)");
  EXPECT_TRUE(diff_reports(before, after, GateOptions{std::nullopt, 200.0}).offenders.empty());
  after.programs[0].run_cnt.reset();  // not measured in the new recording: no verdict
  EXPECT_TRUE(diff_reports(before, after, GateOptions{std::nullopt, 0.0}).offenders.empty());
}

TEST(Diff, PercentsAreOfEachRecordingsOwnTotal) {
  // Twice as long, same shares: samples double, percents stay.
  Diff d = diff_reports(make(1, 10, 10), make(2, 20, 20));
  ASSERT_EQ(d.programs.size(), 1u);
  EXPECT_EQ(d.programs[0].delta(), 10);
  EXPECT_DOUBLE_EQ(d.programs[0].delta_percent(), 0.0);
  // Empty recordings divide by nothing.
  Diff empty = diff_reports(analysis::ReportData{}, make(2, 1, 0));
  ASSERT_EQ(empty.symbols.size(), 1u);
  EXPECT_DOUBLE_EQ(empty.symbols[0].before_percent, 0.0);
  EXPECT_DOUBLE_EQ(empty.symbols[0].after_percent, 100.0);
}

TEST(Diff, JsonAndText) {
  Diff d = diff_reports(make(10, 1, 2), make(77, 2, 1));
  d.before_path = "a.data";
  d.after_path = "b.data";
  auto j = nlohmann::json::parse(render_diff_json(d));
  EXPECT_EQ(j["before"]["file"], "a.data");
  EXPECT_EQ(j["before"]["samples"], 3);
  EXPECT_EQ(j["after"]["samples"], 3);
  ASSERT_EQ(j["programs"].size(), 1u);
  const auto& p = j["programs"][0];
  EXPECT_EQ(p["name"], "burn");
  EXPECT_EQ(p["tag"], "0011223344556677");
  EXPECT_EQ(p["before"], 1);
  EXPECT_EQ(p["after"], 2);
  EXPECT_EQ(p["delta"], 1);
  EXPECT_DOUBLE_EQ(p["before_percent"].get<double>(), 33.33);
  EXPECT_DOUBLE_EQ(p["after_percent"].get<double>(), 66.67);
  EXPECT_DOUBLE_EQ(p["delta_percent"].get<double>(), 33.33);
  ASSERT_EQ(j["symbols"].size(), 2u);
  EXPECT_EQ(j["symbols"][0]["dso"], "[bpf]");
  EXPECT_EQ(j["symbols"][1]["delta"], -1);

  std::string text = render_diff_text(d);
  EXPECT_NE(text.find("# before: a.data  samples: 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# Before  After  Delta  Before%  After%   Delta%  Tag               "
                      "Program\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("       1      2     +1   33.33%  66.67%  +33.33%  0011223344556677  burn\n"),
            std::string::npos) << text;
}

TEST(MergeKeys, ProgramKeyIgnoresTheId) {
  analysis::ReportData a = make(10, 1, 0), b = make(99, 1, 0);
  EXPECT_EQ(program_key(a.programs[0]), program_key(b.programs[0]));
  b.programs[0].tag = "ffffffffffffffff";
  EXPECT_NE(program_key(a.programs[0]), program_key(b.programs[0]));
}

}  // namespace
}  // namespace bpfprof::compare
