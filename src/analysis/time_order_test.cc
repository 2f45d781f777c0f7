// SPDX-License-Identifier: Apache-2.0
// Time windows (plan_time_windows, WindowSamples) over recordings built with
// rounds whose samples are out of order within perf's FINISHED_ROUND
// contract, ties at the round limits included, against a plain stable sort
// by time.
#include "analysis/time_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "testing/subprocess.h"
#include "testing/time_window_recording.h"

namespace bpfprof::analysis {
namespace {

using bpfprof::testing::GenRecord;
using bpfprof::testing::generate;
using bpfprof::testing::open_session;
using bpfprof::testing::stable_sorted_offsets;
using bpfprof::testing::write_recording;

constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();

// What pass 1 records for `records` laid out one byte each: round marks with
// the clock's limits, and each sample's (offset, time).
struct Layout {
  std::vector<RoundMark> rounds;
  std::vector<std::pair<uint64_t, uint64_t>> samples;  // (offset, time)
  uint64_t end = 0;
};

Layout lay_out(const std::vector<GenRecord>& records) {
  Layout l;
  RoundClock clock;
  for (const GenRecord& g : records) {
    const uint64_t at = l.end++;
    if (g.round_end) {
      l.rounds.push_back(RoundMark{at, clock.end_round()});
      continue;
    }
    clock.saw(g.time);
    if (g.sample) l.samples.emplace_back(at, g.time);
  }
  return l;
}

// Checks the shape of a plan over data [0, end).
void expect_consecutive(const std::vector<TimeWindow>& windows, uint64_t end) {
  ASSERT_FALSE(windows.empty());
  EXPECT_EQ(windows.front().first_time, 0u);
  EXPECT_EQ(windows.back().last_time, kNoLimit);
  uint64_t progress = 0;
  for (size_t k = 0; k < windows.size(); k++) {
    const TimeWindow& w = windows[k];
    EXPECT_LE(w.first_time, w.last_time) << "window " << k;
    EXPECT_LE(w.begin, w.end) << "window " << k;
    EXPECT_LE(w.end, end) << "window " << k;
    if (k > 0) {
      EXPECT_EQ(w.first_time, windows[k - 1].last_time + 1) << "window " << k;
      EXPECT_GE(w.begin, windows[k - 1].begin) << "window " << k;
    }
    progress += w.progress_bytes;
  }
  EXPECT_EQ(progress, end);
}

TEST(TimeWindows, NoRoundsIsOneWindowOverEverything) {
  const auto windows = plan_time_windows({}, 100, 5000, 10);
  ASSERT_EQ(windows.size(), 1u);
  EXPECT_EQ(windows[0].first_time, 0u);
  EXPECT_EQ(windows[0].last_time, kNoLimit);
  EXPECT_EQ(windows[0].begin, 100u);
  EXPECT_EQ(windows[0].end, 5000u);
  EXPECT_EQ(windows[0].progress_bytes, 4900u);
}

TEST(TimeWindows, CutsOnlyBetweenDifferentLimits) {
  // Limits 0 0 50 50 50 90: with a tiny target every round could cut, but
  // equal limits separate nothing.
  const std::vector<RoundMark> rounds = {{10, 0},  {20, 0},  {30, 50},
                                                   {40, 50}, {50, 50}, {60, 90}};
  const auto windows = plan_time_windows(rounds, 0, 70, 1);
  expect_consecutive(windows, 70);
  ASSERT_EQ(windows.size(), 4u);
  EXPECT_EQ(windows[0].last_time, 0u);
  EXPECT_EQ(windows[1].last_time, 50u);
  EXPECT_EQ(windows[2].last_time, 90u);
  // Times in (0, 50]: segments j with limit(j + 2) > 0, i.e. from segment 1
  // (limit(3) = 50), up to the last segment whose limit is <= 50 (segment 5).
  EXPECT_EQ(windows[1].begin, 10u);
  EXPECT_EQ(windows[1].end, 60u);
  // Times above 90: from segment 4 (limit(6) = 90 is not above; past the
  // last round there is no bound, so segments 5 and 6).
  EXPECT_EQ(windows[3].begin, 50u);
  EXPECT_EQ(windows[3].end, 70u);
}

// Every sample of `l` lies in the bytes of the window of its time.
void expect_samples_in_their_windows(const Layout& l,
                                     const std::vector<TimeWindow>& windows,
                                     const std::string& what) {
  for (const auto& [at, time] : l.samples) {
    auto w = std::find_if(windows.begin(), windows.end(), [&](const TimeWindow& w) {
      return w.first_time <= time && time <= w.last_time;
    });
    ASSERT_NE(w, windows.end()) << what << " time " << time;
    EXPECT_GE(at, w->begin) << what << " time " << time;
    EXPECT_LT(at, w->end) << what << " time " << time;
  }
}

TEST(TimeWindows, EverySampleLiesInItsWindowsBytes) {
  for (uint32_t seed = 1; seed <= 20; seed++) {
    const Layout l = lay_out(generate(seed, 300, 12, 6));
    for (uint64_t target : {uint64_t{1}, uint64_t{7}, uint64_t{40}, uint64_t{1} << 40}) {
      const auto windows = plan_time_windows(l.rounds, 0, l.end, target);
      expect_consecutive(windows, l.end);
      if (target == 1) {
        EXPECT_GT(windows.size(), 100u);
      }
      expect_samples_in_their_windows(l, windows, "seed " + std::to_string(seed) + " target " +
                                                      std::to_string(target));
    }
  }
}

TEST(TimeWindows, NarrowedWindowsStillHoldEverySample) {
  uint64_t walked_before = 0, walked_after = 0;
  for (uint32_t seed = 1; seed <= 20; seed++) {
    const Layout l = lay_out(generate(seed, 300, 12, 6));
    // Each segment's sample times, as pass 1 finds them.
    std::vector<SampleOrder::SampleSpan> spans(l.rounds.size() + 1);
    for (const auto& [at, time] : l.samples) {
      const auto it =
          std::upper_bound(l.rounds.begin(), l.rounds.end(), at,
                           [](uint64_t v, const RoundMark& m) { return v < m.offset; });
      SampleOrder::SampleSpan& s = spans[static_cast<size_t>(it - l.rounds.begin())];
      s.min = std::min(s.min, time);
      s.max = std::max(s.max, time);
    }
    for (uint64_t target : {uint64_t{1}, uint64_t{7}, uint64_t{40}}) {
      const auto planned = plan_time_windows(l.rounds, 0, l.end, target);
      auto windows = planned;
      narrow_time_windows(windows, l.rounds, spans, 0, l.end);
      ASSERT_EQ(windows.size(), planned.size());
      for (size_t k = 0; k < windows.size(); k++) {
        EXPECT_GE(windows[k].begin, planned[k].begin);
        EXPECT_LE(windows[k].end, planned[k].end);
        EXPECT_EQ(windows[k].progress_bytes, planned[k].progress_bytes);
        walked_before += planned[k].end - planned[k].begin;
        walked_after += windows[k].end - windows[k].begin;
      }
      expect_samples_in_their_windows(l, windows, "seed " + std::to_string(seed) + " target " +
                                                      std::to_string(target));
    }
  }
  EXPECT_LT(walked_after, walked_before);  // the point of narrowing
}

class TimeWindowsFile : public ::testing::Test {
 protected:
  bpfprof::testing::TempDir dir_;
};

TEST_F(TimeWindowsFile, PassOneRecordsEveryRoundWithItsLimit) {
  const std::vector<GenRecord> records = generate(3, 50, 10, 5);
  const std::string path = dir_.file("rounds.data");
  write_recording(path, records, 0);
  auto session = open_session(path);
  ASSERT_TRUE(session);
  const Layout l = lay_out(records);
  const std::vector<RoundMark>& rounds = session->sample_order().rounds;
  ASSERT_EQ(rounds.size(), l.rounds.size());
  for (size_t i = 0; i < rounds.size(); i++) {
    EXPECT_EQ(rounds[i].limit, l.rounds[i].limit) << "round " << i;
    auto r = perf::record_at(session->reader().data_section(),
                             rounds[i].offset - session->reader().data_offset());
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->header.type, perf::kRecordFinishedRound) << "round " << i;
  }
}

TEST_F(TimeWindowsFile, CollectedWindowsAreAStableSortByTime) {
  for (uint32_t seed = 1; seed <= 8; seed++) {
    // Odd seeds: random order inside rounds; even: per-CPU runs (the merge
    // of runs, not the fallback sort, orders a window then).
    const std::string path = dir_.file("w" + std::to_string(seed) + ".data");
    write_recording(path, generate(seed, 200, 60, 8, seed % 2 == 0 ? 1 + seed / 2 : 0), 2);
    auto session = open_session(path);
    ASSERT_TRUE(session);
    ASSERT_TRUE(session->sample_order().by_rounds);
    const std::vector<uint64_t> expected = stable_sorted_offsets(*session);
    ASSERT_GT(expected.size(), 1000u);
    for (uint64_t target : {uint64_t{1}, uint64_t{500}, uint64_t{4000}, uint64_t{1} << 40}) {
      const std::vector<TimeWindow> windows =
          plan_time_windows(*session, target);
      ASSERT_FALSE(windows.empty());
      if (target == 1) {
        EXPECT_GT(windows.size(), 50u);
      }
      WindowSamples samples;
      std::vector<uint64_t> got;
      for (const TimeWindow& w : windows) {
        ASSERT_TRUE(samples.collect(*session, w).ok());
        for (const OrderedSample& s : samples.samples()) got.push_back(s.record.offset);
      }
      EXPECT_EQ(got, expected) << "seed " << seed << " target " << target;
    }
    // The round merge (compressed files) gives the same order.
    std::vector<uint64_t> merged;
    ASSERT_TRUE(
        for_each_in_time_order(*session, 100,
                                         [&](std::span<const OrderedSample> batch) {
                                           for (const OrderedSample& s : batch)
                                             merged.push_back(s.record.offset);
                                           return ok_status();
                                         })
            .ok());
    EXPECT_EQ(merged, expected) << "seed " << seed;
  }
}

TEST_F(TimeWindowsFile, BrokenContractHasNoWindows) {
  std::vector<GenRecord> records = generate(5, 20, 10, 5);
  // A sample far below the limit of the last round.
  records.push_back(GenRecord{false, true, 0});
  const std::string path = dir_.file("broken.data");
  write_recording(path, records, 0);
  auto session = open_session(path);
  ASSERT_TRUE(session);
  EXPECT_FALSE(session->sample_order().by_rounds);
  EXPECT_TRUE(plan_time_windows(*session, 1).empty());
}

}  // namespace
}  // namespace bpfprof::analysis
