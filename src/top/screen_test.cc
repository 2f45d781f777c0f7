// SPDX-License-Identifier: Apache-2.0
// The lines both views draw: columns, gone marks, limits and the width cut.
#include "top/screen.h"

#include <gtest/gtest.h>

namespace bpfprof::top {
namespace {

Model sample_model() {
  Model m;
  Interval iv;
  iv.seconds = 1;
  iv.samples = 1000;
  iv.programs = {{11, "long_burner", "aa", 500, false, "agent[42]"},
                 {12, "burner", "bb", 100, true, "[unknown]"},
                 {13, "other", "cc", 0, false, "[pinned]"}};
  iv.runs = std::vector<RunReading>{{11, 2000, 2000000}, {13, 0, 0}};
  iv.symbols = {{"bpf_prog_aa_long_burner", "[bpf]", symbols::FrameKind::kBpf, 500},
                {"do_idle", "[kernel.kallsyms]", symbols::FrameKind::kKernel, 300}};
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
  const size_t programs = text.find("  OWNER                   BPF PROGRAM");
  const size_t hot = text.find(" 50.00%      500       2000      2000.0      1000      11  "
                               "agent[42]               long_burner");
  const size_t gone = text.find("burner  [gone]");
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
