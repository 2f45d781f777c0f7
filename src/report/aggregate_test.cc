// SPDX-License-Identifier: Apache-2.0
// Pass 2 over many chunks: however the chunks are split between threads (and
// re-split when a thread runs out), the report is the one a single thread
// makes.
#include "report/aggregate.h"

#include <gtest/gtest.h>

#include <string>

#include "perfdata/test_util.h"
#include "report/render.h"
#include "report/session.h"
#include "testing/subprocess.h"

namespace bpfprof::report {
namespace {

using bpfprof::testing::ByteVec;
using bpfprof::testing::SampleValues;
using bpfprof::testing::TrailerValues;

constexpr uint64_t kSampleType = perfdata::test::kSampleType | PERF_SAMPLE_CALLCHAIN;

// Three BPF programs, the third reusing the first one's address after it is
// unloaded; four processes; samples spread unevenly over 40 chunks.
std::string write_recording(const std::string& path) {
  std::vector<perfdata::AttrEntry> attrs = perfdata::test::two_attrs();
  for (auto& a : attrs) a.attr.sample_type = kSampleType;
  auto w = perfdata::FileWriter::create(path, attrs);
  if (!w.ok()) return w.error().to_string();
  auto side = [&](uint64_t time) {
    return TrailerValues{0, 0, time, perfdata::test::kDummyId, 0, 0};
  };
  using bpfprof::testing::comm_record;
  using bpfprof::testing::ksymbol_record;
  constexpr uint64_t kA = 0xffffffffc0001000, kB = 0xffffffffc0003000;
  std::vector<ByteVec> records = {
      ksymbol_record(kSampleType, kA, 0x200, perf::kKsymTypeBpf, 0, "bpf_prog_1111111111111111_a",
                     side(1)),
      ksymbol_record(kSampleType, kB, 0x200, perf::kKsymTypeBpf, 0, "bpf_prog_2222222222222222_b",
                     side(1)),
  };
  for (uint32_t pid = 1; pid <= 4; pid++) {
    records.push_back(comm_record(kSampleType, pid, pid, "proc" + std::to_string(pid), side(1)));
  }
  for (const ByteVec& r : records) {
    if (!w->append(r).ok()) return "append";
  }
  constexpr uint64_t kSamples = 40 * report::Session::kChunkSamples;
  uint64_t state = 7;
  for (uint64_t i = 0; i < kSamples; i++) {
    const uint64_t time = 100 + i;
    if (i == kSamples / 2) {
      // a goes, c takes its address.
      if (!w->append(ksymbol_record(kSampleType, kA, 0x200, perf::kKsymTypeBpf,
                                    perf::kKsymFlagUnregister, "bpf_prog_1111111111111111_a",
                                    side(time)))
               .ok() ||
          !w->append(ksymbol_record(kSampleType, kA, 0x100, perf::kKsymTypeBpf, 0,
                                    "bpf_prog_3333333333333333_c", side(time)))
               .ok()) {
        return "append";
      }
    }
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const uint64_t r = state >> 33;
    SampleValues s;
    s.id = perfdata::test::kSampleId;
    // Early samples spread over more distinct addresses (costlier chunks).
    const uint64_t spread = i < kSamples / 8 ? 0x1f0 : 0x20;
    s.ip = (r % 3 == 0 ? kB : kA) + (r >> 8) % spread;
    s.pid = s.tid = static_cast<uint32_t>(1 + (r >> 4) % 4);
    s.time = time;
    s.period = 1000 + r % 7;
    s.callchain = {perf::kContextKernel, s.ip, 0xffffffff81000000 + (r >> 12) % 64};
    if (!w->append(bpfprof::testing::sample_record(kSampleType, s, perf::kMiscKernel)).ok()) {
      return "append";
    }
    if (i % 1000 == 999 && !w->finish_round().ok()) return "round";
  }
  Status closed = w->close(perfdata::Features{});
  return closed.ok() ? "" : closed.error().to_string();
}

TEST(AggregateTest, AnySplitBetweenThreadsGivesTheSingleThreadReport) {
  bpfprof::testing::TempDir dir;
  const std::string path = dir.file("many_chunks.data");
  ASSERT_EQ(write_recording(path), "");
  auto session = Session::open(path, SessionOptions{});
  ASSERT_TRUE(session.ok()) << session.error().to_string();
  ASSERT_GE((*session)->chunk_count(), 40u);
  for (const bool stacks : {false, true}) {
    SCOPED_TRACE(stacks ? "-g" : "flat");
    AggregateOptions one;
    one.stacks = stacks;
    one.threads = 1;
    RenderOptions render;
    render.callgraph = stacks;
    auto both = [&](const ReportData& d) {
      return render_text(d, render) + render_json(d, render);
    };
    const std::string want = both(aggregate(**session, one));
    ASSERT_NE(want.find("bpf_prog_3333333333333333_c"), std::string::npos);
    for (const unsigned threads : {2u, 3u, 7u, 64u}) {
      AggregateOptions many = one;
      many.threads = threads;
      EXPECT_EQ(both(aggregate(**session, many)), want) << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace bpfprof::report
