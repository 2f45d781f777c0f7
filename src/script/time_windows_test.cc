// SPDX-License-Identifier: Apache-2.0
// script's time windows (plan_time_windows, WindowSamples): recordings built
// here with rounds whose samples are out of order within perf's
// FINISHED_ROUND contract, ties at the round limits included, against a plain
// stable sort by time.
#include "analysis/time_order.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "testing/perfdata_fixtures.h"
#include "perfdata/writer.h"
#include "script/script.h"
#include "testing/record_builder.h"
#include "testing/subprocess.h"

namespace bpfprof::script {
namespace {

using bpfprof::testing::ByteVec;

constexpr uint64_t kSampleType = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
                                 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
                                 PERF_SAMPLE_CALLCHAIN;
constexpr uint64_t kId = 7;
constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();

// One record of a generated recording, in file order.
struct GenRecord {
  bool round_end = false;
  bool sample = false;  // else a COMM (side-band, timed: it moves the clock too)
  uint64_t time = 0;
};

// Rounds as a recorder keeping the contract writes them: every record's time
// is at or above the limit in force (ties with it are frequent: times are
// multiples of 10), and up to `spread` above it, so samples of neighbouring
// rounds interleave in time. Some rounds are empty or hold only COMMs. With
// `cpus` > 0 a round is that many runs in time order (one per CPU ring, as
// perf and bpfprof write them); with 0 its times are in random order.
std::vector<GenRecord> generate(uint32_t seed, size_t rounds, size_t max_per_round, uint64_t spread,
                                size_t cpus = 0) {
  std::mt19937 rng(seed);
  analysis::RoundClock clock;
  std::vector<GenRecord> out;
  for (size_t r = 0; r < rounds; r++) {
    const size_t n = std::uniform_int_distribution<size_t>(0, max_per_round)(rng);
    std::vector<GenRecord> round;
    for (size_t i = 0; i < n; i++) {
      GenRecord g;
      g.sample = std::uniform_int_distribution<int>(0, 9)(rng) != 0;
      g.time = clock.limit() + 10 * std::uniform_int_distribution<uint64_t>(0, spread)(rng);
      round.push_back(g);
    }
    if (cpus > 0) {
      // Consecutive slices, each sorted: one run per CPU.
      for (size_t c = 0; c < cpus; c++) {
        auto first = round.begin() + static_cast<ptrdiff_t>(n * c / cpus);
        auto last = round.begin() + static_cast<ptrdiff_t>(n * (c + 1) / cpus);
        std::stable_sort(first, last,
                         [](const GenRecord& a, const GenRecord& b) { return a.time < b.time; });
      }
    }
    for (const GenRecord& g : round) {
      clock.saw(g.time);
      out.push_back(g);
    }
    clock.end_round();
    out.push_back(GenRecord{true, false, 0});
  }
  // A tail after the last round end (no upper bound but the file's end).
  for (size_t i = 0; i < max_per_round; i++) {
    out.push_back(GenRecord{false, true, clock.limit() + 10 * (i % 3)});
  }
  return out;
}

// What pass 1 records for `records` laid out one byte each: round marks with
// the clock's limits, and each sample's (offset, time).
struct Layout {
  std::vector<analysis::RoundMark> rounds;
  std::vector<std::pair<uint64_t, uint64_t>> samples;  // (offset, time)
  uint64_t end = 0;
};

Layout lay_out(const std::vector<GenRecord>& records) {
  Layout l;
  analysis::RoundClock clock;
  for (const GenRecord& g : records) {
    const uint64_t at = l.end++;
    if (g.round_end) {
      l.rounds.push_back(analysis::RoundMark{at, clock.end_round()});
      continue;
    }
    clock.saw(g.time);
    if (g.sample) l.samples.emplace_back(at, g.time);
  }
  return l;
}

// Checks the shape of a plan over data [0, end).
void expect_consecutive(const std::vector<analysis::TimeWindow>& windows, uint64_t end) {
  ASSERT_FALSE(windows.empty());
  EXPECT_EQ(windows.front().first_time, 0u);
  EXPECT_EQ(windows.back().last_time, kNoLimit);
  uint64_t progress = 0;
  for (size_t k = 0; k < windows.size(); k++) {
    const analysis::TimeWindow& w = windows[k];
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

TEST(ScriptTimeWindows, NoRoundsIsOneWindowOverEverything) {
  const auto windows = analysis::plan_time_windows({}, 100, 5000, 10);
  ASSERT_EQ(windows.size(), 1u);
  EXPECT_EQ(windows[0].first_time, 0u);
  EXPECT_EQ(windows[0].last_time, kNoLimit);
  EXPECT_EQ(windows[0].begin, 100u);
  EXPECT_EQ(windows[0].end, 5000u);
  EXPECT_EQ(windows[0].progress_bytes, 4900u);
}

TEST(ScriptTimeWindows, CutsOnlyBetweenDifferentLimits) {
  // Limits 0 0 50 50 50 90: with a tiny target every round could cut, but
  // equal limits separate nothing.
  const std::vector<analysis::RoundMark> rounds = {{10, 0},  {20, 0},  {30, 50},
                                                   {40, 50}, {50, 50}, {60, 90}};
  const auto windows = analysis::plan_time_windows(rounds, 0, 70, 1);
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
                                     const std::vector<analysis::TimeWindow>& windows,
                                     const std::string& what) {
  for (const auto& [at, time] : l.samples) {
    auto w = std::find_if(windows.begin(), windows.end(), [&](const analysis::TimeWindow& w) {
      return w.first_time <= time && time <= w.last_time;
    });
    ASSERT_NE(w, windows.end()) << what << " time " << time;
    EXPECT_GE(at, w->begin) << what << " time " << time;
    EXPECT_LT(at, w->end) << what << " time " << time;
  }
}

TEST(ScriptTimeWindows, EverySampleLiesInItsWindowsBytes) {
  for (uint32_t seed = 1; seed <= 20; seed++) {
    const Layout l = lay_out(generate(seed, 300, 12, 6));
    for (uint64_t target : {uint64_t{1}, uint64_t{7}, uint64_t{40}, uint64_t{1} << 40}) {
      const auto windows = analysis::plan_time_windows(l.rounds, 0, l.end, target);
      expect_consecutive(windows, l.end);
      if (target == 1) {
        EXPECT_GT(windows.size(), 100u);
      }
      expect_samples_in_their_windows(l, windows, "seed " + std::to_string(seed) + " target " +
                                                      std::to_string(target));
    }
  }
}

TEST(ScriptTimeWindows, NarrowedWindowsStillHoldEverySample) {
  uint64_t walked_before = 0, walked_after = 0;
  for (uint32_t seed = 1; seed <= 20; seed++) {
    const Layout l = lay_out(generate(seed, 300, 12, 6));
    // Each segment's sample times, as pass 1 finds them.
    std::vector<analysis::SampleOrder::SampleSpan> spans(l.rounds.size() + 1);
    for (const auto& [at, time] : l.samples) {
      const auto it =
          std::upper_bound(l.rounds.begin(), l.rounds.end(), at,
                           [](uint64_t v, const analysis::RoundMark& m) { return v < m.offset; });
      analysis::SampleOrder::SampleSpan& s = spans[static_cast<size_t>(it - l.rounds.begin())];
      s.min = std::min(s.min, time);
      s.max = std::max(s.max, time);
    }
    for (uint64_t target : {uint64_t{1}, uint64_t{7}, uint64_t{40}}) {
      const auto planned = analysis::plan_time_windows(l.rounds, 0, l.end, target);
      auto windows = planned;
      analysis::narrow_time_windows(windows, l.rounds, spans, 0, l.end);
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

// Writes `records` as a perf.data file (a sample's tid is its index among the
// samples, so output order names the samples).
void write_recording(const std::string& path, const std::vector<GenRecord>& records,
                     size_t callchain) {
  perf_event_attr a =
      testing::make_attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, kSampleType);
  a.comm = 1;
  auto w = perfdata::FileWriter::create(path, {perfdata::AttrEntry{a, "cpu-clock", {kId}}});
  ASSERT_TRUE(w.ok()) << w.error().to_string();
  uint32_t tid = 0;
  for (const GenRecord& g : records) {
    if (g.round_end) {
      ASSERT_TRUE(w->finish_round().ok());
      continue;
    }
    ByteVec r;
    if (g.sample) {
      bpfprof::testing::SampleValues s;
      s.id = kId;
      s.ip = 0xffffffff81000000 + tid;
      s.pid = 1;
      s.tid = tid++;
      s.time = g.time;
      s.cpu = tid % 4;
      s.period = 10000;
      s.callchain.assign(callchain, 0xffffffff81001000);
      r = bpfprof::testing::sample_record(kSampleType, s, perf::kMiscKernel);
    } else {
      bpfprof::testing::TrailerValues t;
      t.pid = t.tid = 1;
      t.time = g.time;
      t.id = kId;
      r = bpfprof::testing::comm_record(kSampleType, 1, 1, "gen", t);
    }
    ASSERT_TRUE(w->append(r).ok());
  }
  ASSERT_TRUE(w->close(perfdata::Features{}).ok());
}

std::unique_ptr<analysis::Session> open_session(const std::string& path) {
  auto s = analysis::Session::open(path, analysis::SessionOptions{"", false, nullptr});
  EXPECT_TRUE(s.ok()) << s.error().to_string();
  return s.ok() ? std::move(s).value() : nullptr;
}

// Offsets of the samples in a stable sort by time of the file-order walk.
std::vector<uint64_t> stable_sorted_offsets(const analysis::Session& session) {
  std::vector<std::pair<uint64_t, uint64_t>> samples;  // (time, offset)
  EXPECT_TRUE(session
                  .for_each_sample(0, session.chunk_count(),
                                   [&](const perf::RecordView& r, const perf::SampleLayout& l) {
                                     samples.emplace_back(l.time_of(r).value_or(0), r.offset);
                                   })
                  .ok());
  std::stable_sort(samples.begin(), samples.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<uint64_t> out;
  for (const auto& s : samples) out.push_back(s.second);
  return out;
}

class ScriptTimeWindowsFile : public ::testing::Test {
 protected:
  bpfprof::testing::TempDir dir_;
};

TEST_F(ScriptTimeWindowsFile, PassOneRecordsEveryRoundWithItsLimit) {
  const std::vector<GenRecord> records = generate(3, 50, 10, 5);
  const std::string path = dir_.file("rounds.data");
  write_recording(path, records, 0);
  auto session = open_session(path);
  ASSERT_TRUE(session);
  const Layout l = lay_out(records);
  const std::vector<analysis::RoundMark>& rounds = session->sample_order().rounds;
  ASSERT_EQ(rounds.size(), l.rounds.size());
  for (size_t i = 0; i < rounds.size(); i++) {
    EXPECT_EQ(rounds[i].limit, l.rounds[i].limit) << "round " << i;
    auto r = perf::record_at(session->reader().data_section(),
                             rounds[i].offset - session->reader().data_offset());
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->header.type, perf::kRecordFinishedRound) << "round " << i;
  }
}

TEST_F(ScriptTimeWindowsFile, CollectedWindowsAreAStableSortByTime) {
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
      const std::vector<analysis::TimeWindow> windows =
          analysis::plan_time_windows(*session, target);
      ASSERT_FALSE(windows.empty());
      if (target == 1) {
        EXPECT_GT(windows.size(), 50u);
      }
      analysis::WindowSamples samples;
      std::vector<uint64_t> got;
      for (const analysis::TimeWindow& w : windows) {
        ASSERT_TRUE(samples.collect(*session, w).ok());
        for (const analysis::OrderedSample& s : samples.samples()) got.push_back(s.record.offset);
      }
      EXPECT_EQ(got, expected) << "seed " << seed << " target " << target;
    }
    // The round merge (compressed files) gives the same order.
    std::vector<uint64_t> merged;
    ASSERT_TRUE(
        analysis::for_each_in_time_order(*session, 100,
                                         [&](std::span<const analysis::OrderedSample> batch) {
                                           for (const analysis::OrderedSample& s : batch)
                                             merged.push_back(s.record.offset);
                                           return ok_status();
                                         })
            .ok());
    EXPECT_EQ(merged, expected) << "seed " << seed;
  }
}

TEST_F(ScriptTimeWindowsFile, BrokenContractHasNoWindows) {
  std::vector<GenRecord> records = generate(5, 20, 10, 5);
  // A sample far below the limit of the last round.
  records.push_back(GenRecord{false, true, 0});
  const std::string path = dir_.file("broken.data");
  write_recording(path, records, 0);
  auto session = open_session(path);
  ASSERT_TRUE(session);
  EXPECT_FALSE(session->sample_order().by_rounds);
  EXPECT_TRUE(analysis::plan_time_windows(*session, 1).empty());
}

// script's lines name the samples by tid: their order must be the stable
// sort's. The recording spans several windows (over 2 MiB).
TEST_F(ScriptTimeWindowsFile, WriteScriptPrintsTheStableSort) {
  const std::string path = dir_.file("big.data");
  write_recording(path, generate(9, 2000, 40, 10, 2), 16);
  auto session = open_session(path);
  ASSERT_TRUE(session);
  ASSERT_GT(session->reader().data_size(), 2u << 20);
  ASSERT_GT(analysis::plan_time_windows(*session, 1 << 20).size(), 1u);
  std::vector<uint64_t> expected;
  for (uint64_t offset : stable_sorted_offsets(*session)) {
    auto r = session->record_at(offset);
    ASSERT_TRUE(r.ok());
    const perfdata::FileAttr* attr = session->reader().attr_for(*r);
    ASSERT_NE(attr, nullptr);
    auto s = perf::Sample::parse(*r, attr->layout);
    ASSERT_TRUE(s.ok());
    expected.push_back(s->tid);
  }
  for (unsigned threads : {1u, 3u}) {
    const std::string out_path = dir_.file("out" + std::to_string(threads) + ".json");
    std::FILE* out = std::fopen(out_path.c_str(), "w");
    ASSERT_NE(out, nullptr);
    ScriptOptions o;
    o.format = ScriptFormat::kJson;
    o.threads = threads;
    const Status written = write_script(*session, o, out);
    std::fclose(out);
    ASSERT_TRUE(written.ok()) << written.error().to_string();
    std::ifstream in(out_path);
    std::vector<uint64_t> got;
    for (std::string line; std::getline(in, line);) {
      got.push_back(nlohmann::json::parse(line).at("tid").get<uint64_t>());
    }
    EXPECT_EQ(got, expected) << threads << " threads";
  }
}

TEST_F(ScriptTimeWindowsFile, WriteErrorEndsTheScript) {
  const std::string path = dir_.file("full.data");
  write_recording(path, generate(11, 500, 40, 10), 16);
  auto session = open_session(path);
  ASSERT_TRUE(session);
  ASSERT_FALSE(analysis::plan_time_windows(*session, 1 << 20).empty());
  std::FILE* out = std::fopen("/dev/full", "w");
  if (out == nullptr) GTEST_SKIP() << "no /dev/full";
  const Status written = write_script(*session, ScriptOptions{}, out);
  std::fclose(out);
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.error().to_string().find("writing the script output"), std::string::npos)
      << written.error().to_string();
}

}  // namespace
}  // namespace bpfprof::script
