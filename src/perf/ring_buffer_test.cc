// SPDX-License-Identifier: Apache-2.0
#include "perf/ring_buffer.h"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "testing/record_builder.h"

namespace bpfprof::perf {
namespace {

using testing::ByteVec;

// A 64-byte ring over test memory; records are written at ring positions
// (wrapping like the kernel does) and published by moving data_head.
class RingBufferTest : public ::testing::Test {
 protected:
  static constexpr size_t kSize = 64;

  void start_at(uint64_t pos) {
    meta_.data_tail = pos;
    meta_.data_head = pos;
  }
  void publish(const ByteVec& rec) {
    for (size_t i = 0; i < rec.size(); ++i) data_[(meta_.data_head + i) % kSize] = rec[i];
    meta_.data_head += rec.size();
  }
  RingBuffer ring() { return RingBuffer::over(&meta_, data_.data(), kSize); }

  // Collects (type, bytes) of every record for_each_record hands out.
  struct Seen {
    uint32_t type;
    uint64_t offset;
    ByteVec bytes;
  };
  Result<size_t> drain(RingBuffer& rb, std::vector<Seen>& seen) {
    return rb.for_each_record([&](const RecordView& r) {
      seen.push_back({r.header.type, r.offset, ByteVec(r.bytes.begin(), r.bytes.end())});
    });
  }

  perf_event_mmap_page meta_{};
  std::vector<std::byte> data_ = std::vector<std::byte>(kSize);
};

TEST_F(RingBufferTest, EmptyRing) {
  start_at(0);
  RingBuffer rb = ring();
  EXPECT_EQ(rb.peek().size(), 0u);
  std::vector<Seen> seen;
  auto n = drain(rb, seen);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);
  EXPECT_TRUE(seen.empty());
}

TEST_F(RingBufferTest, RecordSplitAcrossTheEnd) {
  start_at(64 * 5 + 40);  // positions grow forever; only the low bits index the ring
  ByteVec a = testing::finished_round_record();              // 40..48
  ByteVec b = testing::lost_record(0, 7, 1234);              // 48..72: wraps at 64
  ByteVec c = testing::lost_samples_record(0, 5);            // 72..88 (8..24 in the ring)
  publish(a);
  publish(b);
  publish(c);
  RingBuffer rb = ring();
  RingBuffer::Chunk chunk = rb.peek();
  EXPECT_EQ(chunk.first.size(), 24u);
  EXPECT_EQ(chunk.second.size(), 24u);

  std::vector<Seen> seen;
  auto n = drain(rb, seen);
  ASSERT_TRUE(n.ok()) << n.error().to_string();
  EXPECT_EQ(*n, 48u);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[1].type, kRecordLost);
  EXPECT_EQ(seen[1].bytes, b);  // copied whole out of the two halves
  EXPECT_EQ(seen[1].offset, 64u * 5 + 48);
  EXPECT_EQ(seen[2].bytes, c);
  EXPECT_EQ(meta_.data_tail, meta_.data_head);

  SampleLayout layout;
  auto lost = Lost::parse(*record_at(seen[1].bytes, 0), layout);
  ASSERT_TRUE(lost.ok());
  EXPECT_EQ(lost->lost, 1234u);
}

TEST_F(RingBufferTest, HeaderSplitAcrossTheEnd) {
  start_at(60);
  ByteVec b = testing::lost_record(0, 1, 2);
  publish(b);
  RingBuffer rb = ring();
  std::vector<Seen> seen;
  ASSERT_TRUE(drain(rb, seen).ok());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].bytes, b);
}

TEST_F(RingBufferTest, BadHeaderStopsAndKeepsTheRest) {
  start_at(16);
  publish(testing::finished_round_record());
  ByteVec bad = testing::finished_round_record();
  const uint16_t four = 4;
  std::memcpy(bad.data() + 6, &four, 2);
  publish(bad);
  RingBuffer rb = ring();
  std::vector<Seen> seen;
  auto n = drain(rb, seen);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().code, Errc::kBadRecord);
  EXPECT_EQ(*n.error().offset, 24u);
  EXPECT_EQ(seen.size(), 1u);
  EXPECT_EQ(meta_.data_tail, 24u);  // consumed up to the bad record only
}

TEST_F(RingBufferTest, RecordLargerThanPublishedIsAnError) {
  start_at(56);
  ByteVec rec = testing::lost_record(0, 1, 2);  // 24 bytes
  rec.resize(16);                               // only 16 published, header says 24
  publish(rec);
  RingBuffer rb = ring();
  std::vector<Seen> seen;
  auto n = drain(rb, seen);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().code, Errc::kBadRecord);
  EXPECT_TRUE(seen.empty());
  EXPECT_EQ(meta_.data_tail, 56u);
}

TEST_F(RingBufferTest, StrayBytesAndHugeSizesAreErrors) {
  start_at(0);
  publish(ByteVec(4));
  RingBuffer rb = ring();
  std::vector<Seen> seen;
  EXPECT_FALSE(drain(rb, seen).ok());

  // A header claiming 65535 bytes in a 64-byte ring.
  start_at(8);
  ByteVec huge = testing::finished_round_record();
  const uint16_t max = 0xffff;
  std::memcpy(huge.data() + 6, &max, 2);
  publish(huge);
  EXPECT_FALSE(drain(rb, seen).ok());
  EXPECT_TRUE(seen.empty());
}

TEST_F(RingBufferTest, CorruptHeadIsClampedToTheRing) {
  start_at(0);
  meta_.data_head = 1 << 20;
  RingBuffer rb = ring();
  EXPECT_EQ(rb.peek().size(), kSize);
  std::vector<Seen> seen;
  EXPECT_FALSE(drain(rb, seen).ok());  // zero bytes are a size-0 header
}

TEST_F(RingBufferTest, PeekDoesNotConsumeAndMoveKeepsState) {
  start_at(0);
  publish(testing::finished_round_record());
  RingBuffer rb = ring();
  EXPECT_EQ(rb.peek().size(), 8u);
  EXPECT_EQ(rb.peek().size(), 8u);
  RingBuffer moved = std::move(rb);
  moved.consume(8);
  EXPECT_EQ(moved.peek().size(), 0u);
  EXPECT_EQ(moved.data_size(), kSize);
}

}  // namespace
}  // namespace bpfprof::perf
