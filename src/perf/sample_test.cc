// SPDX-License-Identifier: Apache-2.0
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "perf/records.h"
#include "testing/record_builder.h"

namespace bpfprof::perf {
namespace {

using testing::ByteVec;

constexpr uint64_t kBase = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
                           PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;

class SampleTest : public ::testing::Test {
 protected:
  static SampleLayout layout_for(perf_event_attr attr) {
    attr.sample_id_all = 1;
    auto l = SampleLayout::from_attr(attr);
    EXPECT_TRUE(l.ok());
    return l.ok() ? *l : SampleLayout{};
  }
  static SampleLayout layout_for(uint64_t sample_type) {
    perf_event_attr attr{};
    attr.sample_type = sample_type;
    return layout_for(attr);
  }
  static RecordView view(const ByteVec& b) { return *record_at(b, 0); }
  static void set_size(ByteVec& b, uint16_t size) { std::memcpy(b.data() + 6, &size, 2); }
  // The fixed part written for kBase before the variable fields.
  static void write_base(testing::RecordWriter& w) {
    w.u64(9).u64(0x1234).u32(1).u32(2).u64(1000).u32(3).u32(0).u64(4000);
  }
};

TEST_F(SampleTest, WithCallchain) {
  const uint64_t st = kBase | PERF_SAMPLE_CALLCHAIN;
  const std::vector<uint64_t> chain = {kContextKernel, 0xffffffff81000010, 0xffffffff81000020,
                                       kContextUser, 0x401000};
  ByteVec b = testing::sample_record(
      st, {.id = 9, .ip = 0xffffffff81000010, .pid = 1, .tid = 2, .time = 1000, .cpu = 3,
           .period = 4000, .callchain = chain},
      kMiscKernel);
  auto s = Sample::parse(view(b), layout_for(st));
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(s->id, 9u);
  EXPECT_EQ(s->ip, 0xffffffff81000010u);
  EXPECT_EQ(s->pid, 1u);
  EXPECT_EQ(s->tid, 2u);
  EXPECT_EQ(s->time, 1000u);
  EXPECT_EQ(s->cpu, 3u);
  EXPECT_EQ(s->period, 4000u);
  ASSERT_EQ(s->callchain.size(), chain.size());
  for (size_t i = 0; i < chain.size(); ++i) EXPECT_EQ(s->callchain[i], chain[i]);
}

TEST_F(SampleTest, CgroupAfterTheCallchainOnBothPaths) {
  const std::vector<uint64_t> chain = {kContextUser, 0x401000, 0x402000};
  for (uint64_t st : {kBase | PERF_SAMPLE_CGROUP, kBase | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_CGROUP}) {
    ByteVec b = testing::sample_record(
        st, {.id = 9, .ip = 0x401000, .pid = 1, .tid = 2, .time = 1000, .period = 7,
             .callchain = chain, .cgroup = 0x1234567});
    const SampleLayout layout = layout_for(st);
    ASSERT_GT(layout.fast_fixed_bytes(), 0);
    Sample fast;
    ASSERT_TRUE(Sample::parse_fast(view(b), layout, fast));
    auto full = Sample::parse(view(b), layout);
    ASSERT_TRUE(full.ok()) << full.error().to_string();
    for (const Sample* s : {&fast, &*full}) {
      EXPECT_EQ(s->cgroup, 0x1234567u);
      EXPECT_EQ(s->period, 7u);
      EXPECT_EQ(s->callchain.size(), (st & PERF_SAMPLE_CALLCHAIN) ? 3u : 0u);
    }
    // One word short: the fast path refuses, the full parse names the field.
    ByteVec t(b.begin(), b.end() - 8);
    set_size(t, static_cast<uint16_t>(t.size()));
    EXPECT_FALSE(Sample::parse(view(t), layout).ok());
  }
}

TEST_F(SampleTest, SkipsVariableFieldsInAbiOrder) {
  perf_event_attr attr{};
  attr.sample_type = kBase | PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW |
                     PERF_SAMPLE_BRANCH_STACK | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER |
                     PERF_SAMPLE_WEIGHT | PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_TRANSACTION |
                     PERF_SAMPLE_REGS_INTR | PERF_SAMPLE_PHYS_ADDR | PERF_SAMPLE_CGROUP |
                     PERF_SAMPLE_DATA_PAGE_SIZE | PERF_SAMPLE_CODE_PAGE_SIZE | PERF_SAMPLE_AUX;
  attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED;
  attr.branch_sample_type = PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_HW_INDEX;
  attr.sample_regs_user = 0b1011;  // 3 registers
  attr.sample_regs_intr = 0b1;
  testing::RecordWriter w(kRecordSample, kMiscUser);
  write_base(w);
  w.u64(2).u64(111).u64(1).u64(10).u64(2).u64(20);  // read: nr, enabled, {value, id}x2
  w.u64(1).u64(0x401000);                            // callchain
  w.u32(12).u64(0xaaaa).u32(0xbbbb);                 // raw (4 + 12 = 16 bytes)
  w.u64(1).u64(0).u64(1).u64(2).u64(3);              // branch: nr, hw_idx, 1 entry
  w.u64(2).u64(1).u64(2).u64(3);                     // regs_user: abi, 3 regs
  w.u64(16).u64(0).u64(0).u64(16);                   // stack_user: size, data, dyn_size
  w.u64(5).u64(6).u64(7);                            // weight, data_src, transaction
  w.u64(0);                                          // regs_intr: abi NONE, no regs
  w.u64(8).u64(9).u64(4096).u64(4096);               // phys, cgroup, page sizes
  w.u64(8).u64(0x77);                                // aux: size, data
  ByteVec b = w.finish();
  auto s = Sample::parse(view(b), layout_for(attr));
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(s->period, 4000u);
  ASSERT_EQ(s->callchain.size(), 1u);
  EXPECT_EQ(s->callchain[0], 0x401000u);
  EXPECT_EQ(s->raw.size(), 12u);

  // Dropping the last byte of any field shifts everything: never accepted.
  for (size_t n = 8; n < b.size(); ++n) {
    ByteVec t(b.begin(), b.begin() + static_cast<ptrdiff_t>(n));
    set_size(t, static_cast<uint16_t>(n));
    EXPECT_FALSE(Sample::parse(view(t), layout_for(attr)).ok()) << n;
  }
}

TEST_F(SampleTest, HostileCountsAreErrors) {
  const uint64_t st = kBase | PERF_SAMPLE_CALLCHAIN;
  for (uint64_t nr : {uint64_t{2}, uint64_t{1} << 61, ~uint64_t{0}}) {
    testing::RecordWriter w(kRecordSample, kMiscUser);
    write_base(w);
    w.u64(nr).u64(0x401000);
    ByteVec b = w.finish();
    auto s = Sample::parse(view(b), layout_for(st));
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, Errc::kTruncated);
    EXPECT_EQ(*s.error().offset, 64u);  // right after callchain.nr
    EXPECT_NE(s.error().message.find("callchain"), std::string::npos);
  }
  perf_event_attr attr{};
  attr.sample_type = PERF_SAMPLE_STACK_USER;
  ByteVec b = testing::RecordWriter(kRecordSample, 0).u64(~uint64_t{0}).u64(0).finish();
  EXPECT_EQ(Sample::parse(view(b), layout_for(attr)).error().code, Errc::kTruncated);
  attr.sample_type = PERF_SAMPLE_READ;
  attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_LOST;
  b = testing::RecordWriter(kRecordSample, 0).u64(~uint64_t{0} / 2).u64(0).finish();
  EXPECT_EQ(Sample::parse(view(b), layout_for(attr)).error().code, Errc::kTruncated);
}

TEST_F(SampleTest, ExtraBytesAndWrongTypeAreErrors) {
  ByteVec b = testing::sample_record(kBase, {.id = 1});
  b.resize(b.size() + 8);
  set_size(b, static_cast<uint16_t>(b.size()));
  auto s = Sample::parse(view(b), layout_for(kBase));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, Errc::kBadRecord);
  EXPECT_EQ(*s.error().offset, 56u);

  ByteVec lost = testing::lost_record(0, 1, 1);
  EXPECT_EQ(Sample::parse(view(lost), layout_for(kBase)).error().code, Errc::kBadRecord);
}

}  // namespace
}  // namespace bpfprof::perf
