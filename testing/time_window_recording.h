// SPDX-License-Identifier: Apache-2.0
// Recordings made for time-order tests: rounds whose samples are out of order
// within perf's FINISHED_ROUND contract, ties at the round limits included,
// written as perf.data and read back in a stable sort by time. Used by
// analysis/'s time window tests and script's output-order tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "analysis/session.h"
#include "analysis/time_order.h"
#include "perfdata/writer.h"
#include "testing/perfdata_fixtures.h"
#include "testing/record_builder.h"

namespace bpfprof::testing {

// The generated recordings' sample layout and their one attr's id.
inline constexpr uint64_t kGenSampleType = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP |
                                           PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                                           PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;
inline constexpr uint64_t kGenId = 7;

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
inline std::vector<GenRecord> generate(uint32_t seed, size_t rounds, size_t max_per_round, uint64_t spread,
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

// Writes `records` as a perf.data file (a sample's tid is its index among the
// samples, so output order names the samples).
inline void write_recording(const std::string& path, const std::vector<GenRecord>& records,
                     size_t callchain) {
  perf_event_attr a =
      make_attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, kGenSampleType);
  a.comm = 1;
  auto w = perfdata::FileWriter::create(path, {perfdata::AttrEntry{a, "cpu-clock", {kGenId}}});
  ASSERT_TRUE(w.ok()) << w.error().to_string();
  uint32_t tid = 0;
  for (const GenRecord& g : records) {
    if (g.round_end) {
      ASSERT_TRUE(w->finish_round().ok());
      continue;
    }
    ByteVec r;
    if (g.sample) {
      SampleValues s;
      s.id = kGenId;
      s.ip = 0xffffffff81000000 + tid;
      s.pid = 1;
      s.tid = tid++;
      s.time = g.time;
      s.cpu = tid % 4;
      s.period = 10000;
      s.callchain.assign(callchain, 0xffffffff81001000);
      r = sample_record(kGenSampleType, s, perf::kMiscKernel);
    } else {
      TrailerValues t;
      t.pid = t.tid = 1;
      t.time = g.time;
      t.id = kGenId;
      r = comm_record(kGenSampleType, 1, 1, "gen", t);
    }
    ASSERT_TRUE(w->append(r).ok());
  }
  ASSERT_TRUE(w->close(perfdata::Features{}).ok());
}

inline std::unique_ptr<analysis::Session> open_session(const std::string& path) {
  auto s = analysis::Session::open(path, analysis::SessionOptions{"", false, nullptr});
  EXPECT_TRUE(s.ok()) << s.error().to_string();
  return s.ok() ? std::move(s).value() : nullptr;
}

// Offsets of the samples in a stable sort by time of the file-order walk.
inline std::vector<uint64_t> stable_sorted_offsets(const analysis::Session& session) {
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

}  // namespace bpfprof::testing
