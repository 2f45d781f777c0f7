// SPDX-License-Identifier: Apache-2.0
// The lines both views draw: columns, gone marks, limits and the width cut.
#include "top/screen.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace bpfprof::top {
namespace {

// One second with `samples` samples, these programs in it.
Interval second(uint64_t samples, std::vector<ProgramSample> programs) {
  Interval iv;
  iv.seconds = 1;
  iv.samples = samples;
  iv.programs = std::move(programs);
  return iv;
}

Model sample_model() {
  Model m;
  Interval iv = second(1000, {{11, "long_burner", "aa", 500, false, "agent[42]"},
                              {12, "burner", "bb", 100, true, "[unknown]"},
                              {13, "other", "cc", 0, false, "[pinned]"}});
  iv.runs = std::vector<RunReading>{{11, 2000, 2000000}, {13, 0, 0}};
  iv.symbols = {{"bpf_prog_aa_long_burner", "[bpf]", symbols::FrameKind::kBpf, 500},
                {"do_idle", "[kernel.kallsyms]", symbols::FrameKind::kKernel, 300}};
  iv.programs[0].attach_points = {"xdp/eth0"};
  iv.programs[0].attach = "xdp/eth0";
  m.update(iv);
  return m;
}

std::string joined(const std::vector<Line>& lines) {
  std::string s;
  for (const Line& l : lines) s += l.text + "\n";
  return s;
}

TEST(ScreenTest, ProgramTableThenSymbols) {
  Model m = sample_model();
  SessionInfo info{"cpu-clock", 999, 2, true, "", 1.5};
  auto lines = format_screen(m, ViewState{}, info, ScreenSize{});
  const std::string text = joined(lines);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0].style, Line::Style::kTitle);
  EXPECT_NE(lines[0].text.find("bpfprof top  refresh 1"), std::string::npos) << lines[0].text;
  EXPECT_NE(text.find("BPF stats on"), std::string::npos);
  const size_t programs = text.find(
      "   CPU%  SAMPLES       RUNS      RUNS/s    AVG ns INST          IDS  BPF PROGRAM          "
      "    OWNER                   ATTACH\n");
  const size_t hot = text.find(
      " 50.00%      500       2000      2000.0      1000    1           11  long_burner          "
      "    agent[42]               xdp/eth0\n");
  const size_t gone = text.find("    1           12  burner  [gone]           [unknown]               [unknown]\n");
  const size_t symbols = text.find("SYMBOL");
  EXPECT_NE(hot, std::string::npos) << text;
  EXPECT_NE(gone, std::string::npos) << text;
  EXPECT_LT(programs, hot);
  EXPECT_LT(hot, gone);
  EXPECT_LT(gone, symbols);
  EXPECT_NE(text.find("do_idle"), std::string::npos);
  for (const Line& l : lines) {
    if (l.text.find("[gone]") != std::string::npos) {
      EXPECT_EQ(l.style, Line::Style::kGone);
    }
  }
}

// A row per code by default (its instances and ids), a row per instance
// with `instances` (the status line says so); JSON the same way, as
// `report --format json` names the keys.
TEST(ScreenTest, GroupedRowsOrOneRowPerInstance) {
  Model m;
  m.update(second(100, {{12, "burner", "aa", 10, false, "w[1]"},
                        {14, "burner", "aa", 20, false, "w[1]"},
                        {15, "burner", "aa", 5, false, "w[2]"}}));
  SessionInfo info{"cpu-clock", 999, 2, false, "", 0};
  const std::string grouped = joined(format_screen(m, ViewState{}, info, ScreenSize{}));
  EXPECT_NE(grouped.find(" 35.00%       35          -           -         -    3     12,14-15  "
                         "burner                   w[1],w[2]               [unknown]\n"),
            std::string::npos) << grouped;
  ViewState each;
  each.instances = true;
  const std::string rows = joined(format_screen(m, each, info, ScreenSize{}));
  EXPECT_NE(rows.find("sort CPU%  instances"), std::string::npos) << rows;
  EXPECT_NE(rows.find("AVG ns      ID  BPF PROGRAM"), std::string::npos) << rows;
  EXPECT_NE(rows.find(" 20.00%       20          -           -         -      14  burner "),
            std::string::npos) << rows;

  const auto j = nlohmann::json::parse(format_json(m, info, 20, false));
  ASSERT_EQ(j["programs"].size(), 1u);
  EXPECT_EQ(j["programs"][0]["instances"], 3);
  EXPECT_EQ(j["programs"][0]["ids"], nlohmann::json::array({12, 14, 15}));
  EXPECT_EQ(j["programs"][0]["owner"], "w[1],w[2]");
  EXPECT_EQ(j["programs"][0]["attach"], "[unknown]");
  EXPECT_FALSE(j["programs"][0].contains("id"));
  const auto k = nlohmann::json::parse(format_json(m, info, 20, true));
  ASSERT_EQ(k["programs"].size(), 3u);
  EXPECT_EQ(k["programs"][0]["id"], 14);
  EXPECT_FALSE(k["programs"][0].contains("ids"));
}

// Seven-digit ids: a range wider than the IDS cell keeps the columns in
// place (the lowest id and how many more).
TEST(ScreenTest, WideIdRangesKeepTheColumns) {
  Model m;
  m.update(second(100, {{1000000, "burner", "aa", 10, false, "w[1]"},
                        {1000001, "burner", "aa", 20, false, "w[1]"},
                        {1000002, "burner", "aa", 5, false, "w[1]"},
                        {7, "other", "bb", 5, false, "w[1]"}}));
  SessionInfo info{"cpu-clock", 999, 2, false, "", 0};
  const std::string s = joined(format_screen(m, ViewState{}, info, ScreenSize{}));
  EXPECT_NE(s.find("    3   1000000,+2  burner "), std::string::npos) << s;
  EXPECT_NE(s.find("    1            7  other "), std::string::npos) << s;
  const size_t header = s.find("BPF PROGRAM");
  const size_t burner = s.find("burner");
  ASSERT_NE(header, std::string::npos);
  ASSERT_NE(burner, std::string::npos);
  EXPECT_EQ(header - s.rfind('\n', header), burner - s.rfind('\n', burner)) << s;
}

TEST(ScreenTest, BpfOnlyAndLimitsAndWidth) {
  Model m = sample_model();
  SessionInfo info{"cycles", 99, 1, false, "no BPF run statistics: nope", 0};
  ViewState view;
  view.bpf_only = true;
  auto lines = format_screen(m, view, info, ScreenSize{1, 5, 40});
  const std::string text = joined(lines);
  EXPECT_NE(text.find("no BPF run statistics: nope"), std::string::npos);
  EXPECT_NE(text.find("... 2 more programs"), std::string::npos) << text;
  EXPECT_EQ(text.find("do_idle"), std::string::npos);  // kernel symbol hidden
  for (const Line& l : lines) EXPECT_LE(l.text.size(), 40u);
}

}  // namespace
}  // namespace bpfprof::top
