// SPDX-License-Identifier: Apache-2.0
// Features 251 (enrichment) and 252 (run statistics): round trips through the
// feature table, entries larger than this reader knows, hostile headers.
#include <gtest/gtest.h>

#include <cstring>

#include "perfdata/features.h"
#include "perfdata/file_format.h"

namespace bpfprof::perfdata {
namespace {

EnrichmentSection sample_enrichment() {
  EnrichmentSection s;
  s.sched = EnricherSched::kFifo;
  s.in_kernel_errno = 1;
  s.threads = 2;
  s.pinned = true;
  s.lost = 3;
  s.errors = 2;
  s.capture_lost = 4;
  s.capture_refused = "opening the tracepoint: Operation not permitted";
  s.programs.push_back({7, EnrichedProgramEntry::kSynthesized | EnrichedProgramEntry::kStored, 0, 0, 0});
  s.programs.push_back({8, EnrichedProgramEntry::kStored, 1000, 1040, 30});
  s.programs.push_back({9, EnrichedProgramEntry::kGone, 2000, 2100, 0});
  return s;
}

RunStatsSection sample_run_stats() {
  RunStatsSection s;
  s.poll_interval_ns = 100'000'000;
  s.enabled_ns = 5;
  s.disabled_ns = 6;
  // Loaded before recording: the runs are last minus first.
  s.programs.push_back({7, ProgramRunStats::kReadAtEnd, 10, 100, 5000, 90, 300, 15000});
  // Loaded during it: counters began at 0, so the runs are the last value.
  s.programs.push_back({8, ProgramRunStats::kLoadedDuring, 1040, 0, 0, 1500, 40, 800});
  // Read at load only, unloaded before a poll: nothing measured.
  s.programs.push_back({9, ProgramRunStats::kLoadedDuring, 2100, 0, 0, 2100, 0, 0});
  return s;
}

TEST(EnrichmentFeatureTest, RoundTripThroughTheFeatureTable) {
  Features f;
  f.enrichment = sample_enrichment();
  f.run_stats = sample_run_stats();
  auto sections = encode_features(f, {});
  ASSERT_EQ(sections.count(kFeatBpfprofEnrichment), 1u);
  ASSERT_EQ(sections.count(kFeatBpfprofRunStats), 1u);
  Features back;
  std::vector<std::string> names;
  for (auto& [feat, bytes] : sections) ASSERT_TRUE(decode_feature(feat, bytes, 0, back, names).ok());
  ASSERT_TRUE(back.enrichment.has_value());
  const EnrichmentSection& e = *back.enrichment;
  EXPECT_EQ(e.sched, EnricherSched::kFifo);
  EXPECT_EQ(e.path, EnrichmentPath::kUserSpace);
  EXPECT_EQ(e.in_kernel_errno, 1);
  EXPECT_EQ(e.threads, 2u);
  EXPECT_TRUE(e.pinned);
  EXPECT_EQ(e.lost, 3u);
  EXPECT_EQ(e.errors, 2u);
  EXPECT_EQ(e.version, 2u);
  EXPECT_EQ(e.capture_lost, 4u);
  EXPECT_EQ(e.capture_refused, "opening the tracepoint: Operation not permitted");
  ASSERT_EQ(e.programs.size(), 3u);
  EXPECT_EQ(e.programs[1].id, 8u);
  EXPECT_EQ(e.programs[1].acquired_ns, 1040u);
  EXPECT_EQ(e.programs[1].hold_ns, 30u);
  EXPECT_EQ(e.count(EnrichedProgramEntry::kStored), 2u);
  EXPECT_EQ(e.count(EnrichedProgramEntry::kGone), 1u);
  ASSERT_TRUE(back.run_stats.has_value());
  const RunStatsSection& r = *back.run_stats;
  EXPECT_EQ(r.poll_interval_ns, 100'000'000u);
  ASSERT_EQ(r.programs.size(), 3u);
  EXPECT_EQ(r.programs[0].run_cnt(), 200u);
  EXPECT_EQ(r.programs[0].run_time_ns(), 10000u);
  EXPECT_EQ(r.programs[1].run_cnt(), 40u);
  EXPECT_EQ(r.programs[1].run_time_ns(), 800u);
  EXPECT_TRUE(r.programs[0].measured());
  EXPECT_TRUE(r.programs[1].measured());
  EXPECT_FALSE(r.programs[2].measured());
}

TEST(EnrichmentFeatureTest, AcceptsLargerEntriesFromANewerWriter) {
  EnrichmentSection s = sample_enrichment();
  std::vector<std::byte> bytes = encode_enrichment(s);
  // Rebuild with 8 unknown bytes after every 32-byte entry and entry_size 40.
  // The header: 48 bytes of version 1, 16 of version 2, the text padded to 8.
  const size_t kHeader = 64 + ((s.capture_refused.size() + 7) & ~size_t{7});
  std::vector<std::byte> wide(bytes.begin(), bytes.begin() + kHeader);
  const uint32_t entry = 40;
  std::memcpy(wide.data() + 4, &entry, 4);
  for (size_t i = 0; i < s.programs.size(); i++) {
    wide.insert(wide.end(), bytes.begin() + kHeader + i * 32, bytes.begin() + kHeader + (i + 1) * 32);
    wide.insert(wide.end(), 8, std::byte{0xee});
  }
  auto back = decode_enrichment(wide, 0);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  ASSERT_EQ(back->programs.size(), 3u);
  EXPECT_EQ(back->programs[2].id, 9u);
  EXPECT_EQ(back->programs[2].acquired_ns, 2100u);
}

// Files of version 1 (before the in-kernel capture) still read: the same
// layout without capture_lost and the refusal text.
TEST(EnrichmentFeatureTest, ReadsVersionOne) {
  EnrichmentSection s = sample_enrichment();
  std::vector<std::byte> bytes = encode_enrichment(s);
  const size_t v2_extra = 16 + ((s.capture_refused.size() + 7) & ~size_t{7});
  std::vector<std::byte> v1(bytes.begin(), bytes.begin() + 40);
  v1.insert(v1.end(), bytes.begin() + 40 + static_cast<long>(v2_extra), bytes.end());
  const uint32_t one = 1;
  std::memcpy(v1.data(), &one, 4);
  auto back = decode_enrichment(v1, 0);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->version, 1u);
  EXPECT_EQ(back->capture_lost, 0u);
  EXPECT_EQ(back->capture_refused, "");
  EXPECT_EQ(back->errors, 2u);
  ASSERT_EQ(back->programs.size(), 3u);
  EXPECT_EQ(back->programs[2].acquired_ns, 2100u);
  // A refusal text longer than any writer makes is refused with its offset.
  std::vector<std::byte> hostile = bytes;
  const uint32_t huge = 1u << 20;
  std::memcpy(hostile.data() + 48, &huge, 4);
  auto bad = decode_enrichment(hostile, 0x200);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().offset, 0x200u + 48);
}

TEST(EnrichmentFeatureTest, RejectsHostileHeaders) {
  std::vector<std::byte> bytes = encode_run_stats(sample_run_stats());
  auto with_u32 = [&](size_t at, uint32_t v) {
    std::vector<std::byte> b = bytes;
    std::memcpy(b.data() + at, &v, 4);
    return b;
  };
  auto version = decode_run_stats(with_u32(0, 2), 0x100);
  ASSERT_FALSE(version.ok());
  EXPECT_EQ(version.error().code, Errc::kUnsupported);
  auto small = decode_run_stats(with_u32(4, 8), 0x100);
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.error().code, Errc::kBadRecord);
  auto count = decode_run_stats(with_u32(32, 1'000'000), 0x100);
  ASSERT_FALSE(count.ok());
  EXPECT_EQ(count.error().code, Errc::kTruncated);
  EXPECT_EQ(*count.error().offset, 0x100u + 40);
  std::vector<std::byte> cut(bytes.begin(), bytes.begin() + 20);
  EXPECT_FALSE(decode_run_stats(cut, 0).ok());
  std::vector<std::byte> e = encode_enrichment(sample_enrichment());
  const uint32_t bad_sched = 9;
  std::memcpy(e.data() + 12, &bad_sched, 4);
  EXPECT_FALSE(decode_enrichment(e, 0).ok());
}

}  // namespace
}  // namespace bpfprof::perfdata
