// SPDX-License-Identifier: Apache-2.0
#include "record/ring_copier.h"

#include <cstring>

#include <gtest/gtest.h>

#include "perf/event_open.h"
#include "testing/record_builder.h"

namespace bpfprof::record {
namespace {

using bpfprof::testing::ByteVec;

class RingCopierTest : public ::testing::Test {
 protected:
  static constexpr size_t kSize = 512;

  RingCopierTest() {
    perf::SamplingConfig c;
    c.callchain = true;
    layout_ = *perf::SampleLayout::from_attr(perf::make_sampling_attr(c));
  }
  void start_at(uint64_t pos) { meta_.data_tail = meta_.data_head = pos; }
  void publish(const ByteVec& rec) {
    for (size_t i = 0; i < rec.size(); ++i) data_[(meta_.data_head + i) % kSize] = rec[i];
    meta_.data_head += rec.size();
  }
  ByteVec sample(uint64_t time) {
    return testing::sample_record(layout_.sample_type(),
                                  {.id = 5, .ip = 0x1234, .pid = 1, .tid = 1, .time = time,
                                   .period = 1, .callchain = {perf::kContextKernel, 0x1234}},
                                  perf::kMiscKernel);
  }
  perf::RingBuffer ring() { return perf::RingBuffer::over(&meta_, data_.data(), kSize); }

  perf::SampleLayout layout_;
  perf_event_mmap_page meta_{};
  std::vector<std::byte> data_ = std::vector<std::byte>(kSize);
};

TEST_F(RingCopierTest, CopiesEverythingAndCountsByHeader) {
  start_at(kSize * 3 + 400);  // the records below wrap the end of the ring
  const uint64_t st = layout_.sample_type();
  ByteVec expected = testing::concat({
      sample(300),
      testing::lost_record(st, 5, 17),
      sample(200),  // per-ring order is the kernel's; the copier takes min/max
      testing::lost_samples_record(st, 3),
      testing::throttle_record(st, false, 250, 5, 5),
      sample(400),
  });
  publish(expected);
  perf::RingBuffer rb = ring();
  RingCopier copier(layout_);
  ByteVec out;
  auto n = copier.copy(rb, false, [&](Bytes b) {
    out.insert(out.end(), b.begin(), b.end());
    return ok_status();
  });
  ASSERT_TRUE(n.ok()) << n.error().to_string();
  EXPECT_EQ(*n, expected.size());
  EXPECT_EQ(out, expected);
  const DrainCounters& c = copier.counters();
  EXPECT_EQ(c.samples, 3u);
  EXPECT_EQ(c.lost, 17u);
  EXPECT_EQ(c.lost_samples, 3u);
  EXPECT_EQ(c.throttles, 1u);
  EXPECT_EQ(c.records, 6u);
  EXPECT_EQ(c.first_sample_time, 300u);  // first sample of the ring
  EXPECT_EQ(c.last_sample_time, 400u);
  EXPECT_EQ(rb.peek().size(), 0u) << "consumed";
}

TEST_F(RingCopierTest, SidebandLossesAreSeparate) {
  start_at(0);
  publish(testing::lost_record(layout_.sample_type(), 9, 4));
  perf::RingBuffer rb = ring();
  RingCopier copier(layout_);
  ASSERT_TRUE(copier.copy(rb, true, [](Bytes) { return ok_status(); }).ok());
  EXPECT_EQ(copier.counters().lost, 0u);
  EXPECT_EQ(copier.counters().lost_sideband, 4u);
}

TEST_F(RingCopierTest, OutputErrorLeavesTheRingUnconsumed) {
  start_at(0);
  publish(sample(1));
  perf::RingBuffer rb = ring();
  RingCopier copier(layout_);
  auto n = copier.copy(rb, false, [](Bytes) { return Status(make_error(Errc::kIo, "disk full")); });
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().code, Errc::kIo);
  EXPECT_GT(rb.peek().size(), 0u);
}

TEST_F(RingCopierTest, MalformedHeaderIsAnError) {
  start_at(0);
  ByteVec bad(16);
  bad[0] = std::byte{9};
  bad[6] = std::byte{200};  // claims 200 bytes, 16 available
  publish(bad);
  perf::RingBuffer rb = ring();
  RingCopier copier(layout_);
  auto n = copier.copy(rb, false, [](Bytes) { return ok_status(); });
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().code, Errc::kBadRecord);
}

// What a kernel with several side-band listeners writes: header.size grown by
// `extra`, the record's own fields and trailer, then stale bytes.
ByteVec inflate(ByteVec rec, uint16_t extra) {
  uint16_t size = static_cast<uint16_t>(rec.size() + extra);
  std::memcpy(rec.data() + 6, &size, sizeof size);
  rec.insert(rec.end(), extra, std::byte{0xee});
  return rec;
}

TEST_F(RingCopierTest, TrueRecordSize) {
  const uint64_t st = layout_.sample_type();
  const uint8_t tag[8] = {};
  ByteVec ev = testing::bpf_event_record(st, perf::kBpfEventProgLoad, 0, 7, tag, {.time = 5});
  ByteVec big = inflate(ev, 64);
  auto view = [](const ByteVec& b) {
    perf::RecordView v;
    std::memcpy(&v.header, b.data(), sizeof v.header);
    v.bytes = b;
    return v;
  };
  EXPECT_EQ(true_record_size(view(ev), layout_.id_hdr_size()), ev.size());
  EXPECT_EQ(true_record_size(view(big), layout_.id_hdr_size()), ev.size());
  ByteVec ks = testing::ksymbol_record(st, 0xffffffffc0000000, 64, perf::kKsymTypeBpf, 0,
                                       "bpf_prog_0011223344556677_f", {.time = 5});
  EXPECT_EQ(true_record_size(view(inflate(ks, 32)), layout_.id_hdr_size()), ks.size());
  ByteVec s = sample(1);
  EXPECT_EQ(true_record_size(view(s), layout_.id_hdr_size()), s.size());
}

TEST_F(RingCopierTest, RepairsInflatedSidebandRecords) {
  start_at(kSize - 40);  // the first record wraps the end
  const uint64_t st = layout_.sample_type();
  const uint8_t tag[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  ByteVec ks = testing::ksymbol_record(st, 0xffffffffc0000000, 64, perf::kKsymTypeBpf, 0,
                                       "bpf_prog_0102030405060708_f", {.time = 9, .id = 3});
  ByteVec ev = testing::bpf_event_record(st, perf::kBpfEventProgLoad, 0, 7, tag,
                                         {.time = 10, .id = 3});
  ByteVec comm = testing::comm_record(st, 1, 1, "x", {.time = 11, .id = 3});
  publish(inflate(ks, 32));
  publish(comm);
  publish(inflate(ev, 96));
  perf::RingBuffer rb = ring();
  RingCopier copier(layout_);
  ByteVec out;
  auto n = copier.copy(rb, true, [&](Bytes b) {
    out.insert(out.end(), b.begin(), b.end());
    return ok_status();
  });
  ASSERT_TRUE(n.ok()) << n.error().to_string();
  EXPECT_EQ(out, testing::concat({ks, comm, ev}));
  EXPECT_EQ(copier.counters().repaired, 2u);
  EXPECT_EQ(rb.peek().size(), 0u);
}

// A --switch-output cut: the records stamped up to `until` go, the first
// one stamped later and all after it stay for the next file, an inflated
// side-band record timed by its real trailer (its stale tail is 0xee).
TEST_F(RingCopierTest, CopiesUpToACut) {
  start_at(kSize - 24);
  const uint64_t st = layout_.sample_type();
  ByteVec ks = testing::ksymbol_record(st, 0xffffffffc0000000, 64, perf::kKsymTypeBpf, 0,
                                       "bpf_prog_0102030405060708_f", {.time = 25, .id = 3});
  const ByteVec before = testing::concat({sample(10), sample(20)});
  const ByteVec after = testing::concat({sample(30), sample(24)});
  for (uint64_t until : {uint64_t{24}, uint64_t{25}}) {
    SCOPED_TRACE(until);
    start_at(kSize - 24);
    publish(before);
    publish(inflate(ks, 32));
    publish(after);
    perf::RingBuffer rb = ring();
    RingCopier copier(layout_);
    ByteVec out;
    auto n = copier.copy(
        rb, true,
        [&](Bytes b) {
          out.insert(out.end(), b.begin(), b.end());
          return ok_status();
        },
        until);
    ASSERT_TRUE(n.ok()) << n.error().to_string();
    const bool with_ks = until >= 25;
    EXPECT_EQ(out, with_ks ? testing::concat({before, ks}) : before);
    EXPECT_EQ(copier.counters().samples, 2u);
    EXPECT_EQ(copier.file_counters().last_sample_time, 20u);
    // What stays is what a later copy finds, from the first record past the cut.
    const size_t left = (with_ks ? 0 : ks.size() + 32) + after.size();
    EXPECT_EQ(rb.peek().size(), left);
    ByteVec rest;
    ASSERT_TRUE(copier
                    .copy(rb, true,
                          [&](Bytes b) {
                            rest.insert(rest.end(), b.begin(), b.end());
                            return ok_status();
                          })
                    .ok());
    EXPECT_EQ(rest, with_ks ? after : testing::concat({ks, after}));
    EXPECT_EQ(copier.counters().samples, 4u);
  }
}

}  // namespace
}  // namespace bpfprof::record
