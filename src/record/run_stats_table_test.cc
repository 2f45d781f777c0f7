// SPDX-License-Identifier: Apache-2.0
#include "record/run_stats_table.h"

#include <gtest/gtest.h>

namespace bpfprof::record {
namespace {

using perfdata::ProgramRunStats;

const ProgramRunStats* entry(const std::vector<ProgramRunStats>& all, uint32_t id) {
  for (const ProgramRunStats& p : all) {
    if (p.id == id) return &p;
  }
  return nullptr;
}

// Before any switch, a file's table is the recording's; after one, each
// program's first value is what was read at that switch, and programs seen
// nothing new since it (unloaded before the file) are left out.
TEST(RunStatsTableTest, SinceASwitchCountsTheFilesOwnRuns) {
  RunStatsTable at_switch;
  at_switch.saw(1, 100, {10, 1000}, true);   // loaded during the first file
  at_switch.saw(1, 200, {20, 2000}, false);  // read at the switch
  at_switch.saw(2, 150, {5, 50}, false);     // there before; unloaded before the switch
  at_switch.saw(3, 120, {7, 70}, false);     // read last before the switch, then gone

  RunStatsTable now = at_switch;
  now.saw(1, 300, {35, 3500}, false);
  now.saw(4, 250, {0, 0}, true);  // loaded during the second file
  now.saw(4, 300, {3, 30}, false);

  EXPECT_EQ(now.since(RunStatsTable{}, 0).entries().size(), 4u) << "no switch yet: all of it";

  const std::vector<ProgramRunStats> file = now.since(at_switch, 210).entries();
  ASSERT_EQ(file.size(), 2u);
  const ProgramRunStats* one = entry(file, 1);
  ASSERT_NE(one, nullptr);
  EXPECT_FALSE(one->has(ProgramRunStats::kLoadedDuring)) << "its counters ran before this file";
  EXPECT_EQ(one->first_ns, 200u);
  EXPECT_EQ(one->run_cnt(), 15u);
  EXPECT_EQ(one->run_time_ns(), 1500u);
  const ProgramRunStats* four = entry(file, 4);
  ASSERT_NE(four, nullptr);
  EXPECT_TRUE(four->has(ProgramRunStats::kLoadedDuring));
  EXPECT_EQ(four->run_cnt(), 3u);
  EXPECT_EQ(entry(file, 2), nullptr);
  EXPECT_EQ(entry(file, 3), nullptr);
}

}  // namespace
}  // namespace bpfprof::record
