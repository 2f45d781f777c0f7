// SPDX-License-Identifier: Apache-2.0
// The interval model on intervals built by hand: shares, run deltas, gone
// programs kept for a few refreshes, sorting, the symbol table.
#include "top/model.h"

#include <gtest/gtest.h>

namespace bpfprof::top {
namespace {

ProgramSample prog(uint32_t id, const char* name, uint64_t samples, bool unloaded = false) {
  ProgramSample s{id, name, "0011223344556677", samples, unloaded};
  s.total_samples = samples;
  return s;
}

const ProgramRow* find(const std::vector<ProgramRow>& rows, uint32_t id) {
  for (const ProgramRow& r : rows)
    if (r.id == id) return &r;
  return nullptr;
}

TEST(ModelTest, SharesAreOfAllSamplesOfTheInterval) {
  Model m;
  Interval iv;
  iv.seconds = 1;
  iv.samples = 200;
  iv.programs = {prog(1, "long_burner", 100), prog(2, "burner", 50), prog(3, "idle", 0)};
  m.update(iv);
  auto rows = m.programs(SortKey::kCpu);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].name, "long_burner");
  EXPECT_DOUBLE_EQ(rows[0].cpu_percent, 50.0);
  EXPECT_DOUBLE_EQ(rows[1].cpu_percent, 25.0);
  EXPECT_DOUBLE_EQ(rows[2].cpu_percent, 0.0);
  EXPECT_FALSE(rows[0].runs.has_value());  // no statistics
  EXPECT_EQ(m.refreshes(), 1u);
}

TEST(ModelTest, NoSamplesMeansZeroShareNotADivisionByZero) {
  Model m;
  Interval iv;
  iv.programs = {prog(1, "a", 0)};
  m.update(iv);
  EXPECT_DOUBLE_EQ(m.programs(SortKey::kCpu)[0].cpu_percent, 0.0);
}

TEST(ModelTest, RunsAreDeltasFromTheBaselineThenFromTheLastReading) {
  Model m;
  m.set_baseline({{1, 1000, 50000}});  // counts left by an earlier user of the statistics
  Interval iv;
  iv.seconds = 2;
  iv.samples = 10;
  iv.programs = {prog(1, "old", 5), prog(2, "new", 5)};
  iv.runs = std::vector<RunReading>{{1, 1400, 90000}, {2, 10, 5000}};
  m.update(iv);
  auto rows = m.programs(SortKey::kCpu);
  const ProgramRow* old_row = find(rows, 1);
  const ProgramRow* new_row = find(rows, 2);
  ASSERT_TRUE(old_row && new_row);
  EXPECT_EQ(old_row->runs, 400u);
  EXPECT_DOUBLE_EQ(*old_row->runs_per_s, 200.0);
  EXPECT_DOUBLE_EQ(*old_row->avg_ns, 100.0);
  // Loaded while statistics were on: counted from zero.
  EXPECT_EQ(new_row->runs, 10u);
  EXPECT_DOUBLE_EQ(*new_row->avg_ns, 500.0);

  iv.seconds = 1;
  iv.runs = std::vector<RunReading>{{1, 1400, 90000}, {2, 30, 7000}};
  m.update(iv);
  rows = m.programs(SortKey::kCpu);
  EXPECT_EQ(find(rows, 1)->runs, 0u);
  EXPECT_FALSE(find(rows, 1)->avg_ns.has_value());  // no runs: no average
  EXPECT_EQ(find(rows, 2)->runs, 20u);
  EXPECT_DOUBLE_EQ(*find(rows, 2)->avg_ns, 100.0);
}

TEST(ModelTest, CounterGoingBackwardsGivesNoDelta) {
  Model m;
  Interval iv;
  iv.seconds = 1;
  iv.programs = {prog(1, "a", 0)};
  iv.runs = std::vector<RunReading>{{1, 100, 1000}};
  m.update(iv);
  iv.runs = std::vector<RunReading>{{1, 50, 500}};
  m.update(iv);
  EXPECT_FALSE(m.programs(SortKey::kCpu)[0].runs.has_value());
}

TEST(ModelTest, GoneProgramsStayForKeepGoneRefreshesThenDrop) {
  Model m(3);
  Interval iv;
  iv.seconds = 1;
  iv.samples = 100;
  // Program 7 loaded and unloaded within the first interval, with samples.
  iv.programs = {prog(1, "long_burner", 60), prog(7, "burner", 30, /*unloaded=*/true)};
  m.update(iv);
  auto rows = m.programs(SortKey::kCpu);
  ASSERT_NE(find(rows, 7), nullptr);
  EXPECT_TRUE(find(rows, 7)->gone);
  EXPECT_EQ(find(rows, 7)->gone_refreshes, 0u);
  EXPECT_DOUBLE_EQ(find(rows, 7)->cpu_percent, 30.0);  // its share is still shown
  EXPECT_FALSE(find(rows, 1)->gone);

  iv.programs = {prog(1, "long_burner", 90)};  // 7 is no longer mentioned
  m.update(iv);
  rows = m.programs(SortKey::kCpu);
  ASSERT_NE(find(rows, 7), nullptr);
  EXPECT_TRUE(find(rows, 7)->gone);
  EXPECT_EQ(find(rows, 7)->gone_refreshes, 1u);
  EXPECT_EQ(find(rows, 7)->samples, 0u);

  m.update(iv);
  ASSERT_NE(find(m.programs(SortKey::kCpu), 7), nullptr);  // third refresh: still there
  m.update(iv);
  EXPECT_EQ(find(m.programs(SortKey::kCpu), 7), nullptr);  // fourth: dropped
  EXPECT_NE(find(m.programs(SortKey::kCpu), 1), nullptr);
}

TEST(ModelTest, ProgramThatVanishesWithoutUnloadIsGoneToo) {
  Model m(1);
  Interval iv;
  iv.programs = {prog(1, "a", 0), prog(2, "b", 0)};
  m.update(iv);
  iv.programs = {prog(1, "a", 0)};
  m.update(iv);
  ASSERT_NE(find(m.programs(SortKey::kCpu), 2), nullptr);
  EXPECT_TRUE(find(m.programs(SortKey::kCpu), 2)->gone);
  m.update(iv);
  EXPECT_EQ(find(m.programs(SortKey::kCpu), 2), nullptr);
}

TEST(ModelTest, SortKeysOrderDescendingWithMissingValuesLast) {
  Model m;
  Interval iv;
  iv.seconds = 1;
  iv.samples = 100;
  iv.programs = {prog(1, "hot", 50), prog(2, "busy", 10), prog(3, "slow", 20),
                 prog(4, "gone", 5, true)};
  iv.runs = std::vector<RunReading>{{1, 100, 100000}, {2, 5000, 500000}, {3, 10, 500000}};
  m.update(iv);
  auto names = [&](SortKey k) {
    std::vector<std::string> n;
    for (const ProgramRow& r : m.programs(k)) n.push_back(r.name);
    return n;
  };
  EXPECT_EQ(names(SortKey::kCpu), (std::vector<std::string>{"hot", "slow", "busy", "gone"}));
  EXPECT_EQ(names(SortKey::kRuns), (std::vector<std::string>{"busy", "hot", "slow", "gone"}));
  // avg ns: slow 50000, hot 1000, busy 100.
  EXPECT_EQ(names(SortKey::kAvgNs), (std::vector<std::string>{"slow", "hot", "busy", "gone"}));
  EXPECT_EQ(next_sort_key(SortKey::kCpu), SortKey::kRuns);
  EXPECT_EQ(next_sort_key(SortKey::kRuns), SortKey::kAvgNs);
  EXPECT_EQ(next_sort_key(SortKey::kAvgNs), SortKey::kCpu);
}

TEST(ModelTest, EqualSharesSortByIdForAStableScreen) {
  Model m;
  Interval iv;
  iv.programs = {prog(9, "x", 1), prog(3, "y", 1), prog(5, "z", 1)};
  m.update(iv);
  auto rows = m.programs(SortKey::kCpu);
  EXPECT_EQ(rows[0].id, 3u);
  EXPECT_EQ(rows[1].id, 5u);
  EXPECT_EQ(rows[2].id, 9u);
}

// Instances of the same code (name and tag) are one row, as in `report`:
// ids, samples, shares, runs and rates summed, avg ns over every run, owners
// and attach points of all, gone once every instance is. `instances` gives
// them a row each; a zero tag is never merged.
TEST(ModelTest, InstancesOfTheSameCodeShareARow) {
  Model m;
  m.set_baseline({{12, 100, 1000}});
  Interval iv;
  iv.seconds = 2;
  iv.samples = 100;
  ProgramSample a = prog(12, "burner", 10), b = prog(15, "burner", 20), c = prog(14, "burner", 5);
  a.owner = "agent-a[1]";
  a.attach_points = {"xdp/eth0"};
  a.attach = "xdp/eth0";
  b.owner = "agent-b[2]";
  b.attach_points = {"tracepoint/sched/sched_switch"};
  b.attach = "tracepoint/sched/sched_switch";
  c.owner = "agent-a[1]";
  c.attach = "[none known]";
  ProgramSample other = prog(13, "other", 50);  // same tag, another name: its own row
  ProgramSample anon1 = prog(20, "anon", 1), anon2 = prog(21, "anon", 1);
  anon1.tag = anon2.tag = std::string(16, '0');
  iv.programs = {a, b, c, other, anon1, anon2};
  // 12: 300 runs in 3000 ns (from its baseline); 15: 100 runs in 7000 ns; 14: none yet.
  iv.runs = std::vector<RunReading>{{12, 400, 4000}, {15, 100, 7000}};
  m.update(iv);

  const std::vector<ProgramRow> rows = m.programs(SortKey::kCpu);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].name, "other");
  const ProgramRow& g = rows[1];
  EXPECT_EQ(g.name, "burner");
  EXPECT_EQ(g.id, 12u);
  EXPECT_EQ(g.ids, (std::vector<uint32_t>{12, 14, 15}));
  EXPECT_EQ(g.samples, 35u);
  EXPECT_DOUBLE_EQ(g.cpu_percent, 35.0);
  EXPECT_EQ(g.runs, 400u);
  EXPECT_DOUBLE_EQ(*g.runs_per_s, 200.0);
  EXPECT_DOUBLE_EQ(*g.avg_ns, 10000.0 / 400);
  EXPECT_EQ(g.owner, "agent-a[1],agent-b[2]");
  EXPECT_EQ(g.attach_points,
            (std::vector<std::string>{"tracepoint/sched/sched_switch", "xdp/eth0"}));
  EXPECT_EQ(g.attach, "tracepoint/sched/sched_switch, xdp/eth0");
  EXPECT_FALSE(g.gone);
  EXPECT_EQ(rows[2].ids, (std::vector<uint32_t>{20}));
  EXPECT_EQ(rows[3].ids, (std::vector<uint32_t>{21}));

  const std::vector<ProgramRow> each = m.programs(SortKey::kCpu, true);
  ASSERT_EQ(each.size(), 6u);
  ASSERT_NE(find(each, 14), nullptr);
  EXPECT_EQ(find(each, 14)->attach, "[none known]");
  EXPECT_EQ(find(each, 15)->owner, "agent-b[2]");
  EXPECT_DOUBLE_EQ(*find(each, 15)->avg_ns, 70.0);

  // Two instances unload: the row is not gone while the third runs.
  iv.programs = {prog(12, "burner", 0, true), prog(14, "burner", 0, true), prog(15, "burner", 4)};
  iv.runs.reset();
  m.update(iv);
  std::vector<ProgramRow> later = m.programs(SortKey::kCpu);  // find() points into it
  const ProgramRow* burner = find(later, 12);
  ASSERT_NE(burner, nullptr);
  EXPECT_EQ(burner->ids.size(), 3u);
  EXPECT_FALSE(burner->gone);
  iv.programs = {prog(15, "burner", 0, true)};
  m.update(iv);
  later = m.programs(SortKey::kCpu);
  burner = find(later, 12);
  ASSERT_NE(burner, nullptr);
  EXPECT_TRUE(burner->gone);
  EXPECT_EQ(burner->gone_refreshes, 0u);  // the last one just went
}

TEST(ModelTest, SymbolsOfTheLastIntervalHottestFirstAndBpfOnly) {
  Model m;
  Interval iv;
  iv.samples = 10;
  using symbols::FrameKind;
  iv.symbols = {{"memcpy", "[kernel.kallsyms]", FrameKind::kKernel, 3},
                {"bpf_prog_1_long_burner", "[bpf]", FrameKind::kBpf, 5},
                {"bpf_trampoline_6", "[bpf]", FrameKind::kBpfImage, 1},
                {"main", "/bin/x", FrameKind::kUser, 1}};
  m.update(iv);
  auto all = m.symbols(false, 10);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].name, "bpf_prog_1_long_burner");
  EXPECT_DOUBLE_EQ(all[0].cpu_percent, 50.0);
  EXPECT_EQ(all[1].name, "memcpy");
  EXPECT_EQ(all[2].name, "bpf_trampoline_6");  // ties by name
  EXPECT_EQ(all[3].name, "main");
  EXPECT_EQ(m.symbols(false, 2).size(), 2u);
  auto bpf = m.symbols(true, 10);
  ASSERT_EQ(bpf.size(), 2u);
  EXPECT_EQ(bpf[1].name, "bpf_trampoline_6");
  // The next interval replaces the symbols.
  m.update(Interval{});
  EXPECT_TRUE(m.symbols(false, 10).empty());
}

}  // namespace
}  // namespace bpfprof::top
