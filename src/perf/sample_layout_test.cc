// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "perf/records.h"
#include "testing/record_builder.h"

namespace bpfprof::perf {
namespace {

using testing::ByteVec;

SampleLayout layout_for(uint64_t sample_type, bool sample_id_all = true) {
  perf_event_attr attr{};
  attr.sample_type = sample_type;
  attr.sample_id_all = sample_id_all ? 1 : 0;
  auto l = SampleLayout::from_attr(attr);
  EXPECT_TRUE(l.ok());
  return l.ok() ? *l : SampleLayout{};
}

RecordView view(const ByteVec& b) { return *record_at(b, 0); }

TEST(SampleLayoutTest, RejectsBitsPerf61DoesNotKnow) {
  perf_event_attr attr{};
  attr.sample_type = PERF_SAMPLE_IP | (1ull << 25);
  auto l = SampleLayout::from_attr(attr);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code, Errc::kUnsupported);

  attr.sample_type = PERF_SAMPLE_READ;
  attr.read_format = 1u << 5;
  EXPECT_FALSE(SampleLayout::from_attr(attr).ok());

  attr.read_format = 0;
  attr.sample_type = PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT;
  EXPECT_FALSE(SampleLayout::from_attr(attr).ok());
}

TEST(SampleLayoutTest, TrailerSizeCountsSixBits) {
  const uint64_t all = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
                       PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
  EXPECT_EQ(layout_for(all | PERF_SAMPLE_IP | PERF_SAMPLE_PERIOD).id_hdr_size(), 48u);
  EXPECT_EQ(layout_for(PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN).id_hdr_size(), 0u);
  EXPECT_EQ(layout_for(all, /*sample_id_all=*/false).id_hdr_size(), 0u);
}

// time_of/id_of agree with the full parsers for every combination of the bits
// that move the fields around.
TEST(SampleLayoutTest, TimeAndIdMatchFullParse) {
  const uint64_t movers[] = {PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_IP,        PERF_SAMPLE_TID,
                             PERF_SAMPLE_ADDR,       PERF_SAMPLE_ID,        PERF_SAMPLE_STREAM_ID,
                             PERF_SAMPLE_CPU,        PERF_SAMPLE_PERIOD};
  for (unsigned mask = 0; mask < (1u << 8); ++mask) {
    uint64_t st = PERF_SAMPLE_TIME;
    for (unsigned i = 0; i < 8; ++i) {
      if (mask & (1u << i)) st |= movers[i];
    }
    SampleLayout l = layout_for(st);
    const bool has_id = st & (PERF_SAMPLE_ID | PERF_SAMPLE_IDENTIFIER);

    ByteVec s = testing::sample_record(
        st, {.id = 99, .ip = 1, .pid = 2, .tid = 3, .time = 4444, .addr = 5, .stream_id = 6,
             .cpu = 7, .period = 8});
    EXPECT_EQ(l.time_of(view(s)), std::optional<uint64_t>(4444)) << std::hex << st;
    EXPECT_EQ(l.id_of(view(s)), has_id ? std::optional<uint64_t>(99) : std::nullopt);

    ByteVec c = testing::comm_record(
        st, 1, 1, "x", {.pid = 2, .tid = 3, .time = 5555, .id = 88, .stream_id = 6, .cpu = 7});
    EXPECT_EQ(l.time_of(view(c)), std::optional<uint64_t>(5555)) << std::hex << st;
    EXPECT_EQ(l.id_of(view(c)), has_id ? std::optional<uint64_t>(88) : std::nullopt);
    auto full = Comm::parse(view(c), l);
    ASSERT_TRUE(full.ok()) << full.error().to_string();
    EXPECT_EQ(full->sample_id.time, 5555u);
  }
}

TEST(SampleLayoutTest, AbsentOrUntrustworthyGiveNullopt) {
  const uint64_t st = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
  SampleLayout no_all = layout_for(st, /*sample_id_all=*/false);
  ByteVec c = testing::comm_record(0, 1, 1, "x");
  EXPECT_EQ(no_all.time_of(view(c)), std::nullopt);
  EXPECT_EQ(no_all.id_of(view(c)), std::nullopt);

  SampleLayout l = layout_for(st);
  // User records carry no trailer.
  EXPECT_EQ(l.time_of(view(testing::finished_round_record())), std::nullopt);
  // A record too short for its trailer is not read.
  ByteVec tiny = testing::RecordWriter(kRecordLost, 0).u64(1).finish();
  EXPECT_EQ(l.time_of(view(tiny)), std::nullopt);
  // A sample too short for its time field is not read.
  ByteVec short_sample = testing::RecordWriter(kRecordSample, 0).u64(1).finish();
  EXPECT_EQ(l.time_of(view(short_sample)), std::nullopt);
  EXPECT_EQ(l.id_of(view(short_sample)), std::optional<uint64_t>(1));
  // No TIME bit at all.
  SampleLayout no_time = layout_for(PERF_SAMPLE_IP);
  ByteVec s = testing::sample_record(PERF_SAMPLE_IP, {.ip = 3});
  EXPECT_EQ(no_time.time_of(view(s)), std::nullopt);
}

}  // namespace
}  // namespace bpfprof::perf
