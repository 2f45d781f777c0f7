// SPDX-License-Identifier: Apache-2.0
// Feature 254 (attach points): a round trip through the feature table, and
// hostile sections refused with the byte offset.
#include <gtest/gtest.h>

#include <cstring>

#include "perfdata/features.h"
#include "perfdata/file_format.h"

namespace bpfprof::perfdata {
namespace {

AttachSection sample_attach() {
  AttachSection s;
  s.entries.push_back({10, 3, AttachEntry::kAtStart, 0, "tracepoint/sched/sched_switch"});
  s.entries.push_back({10, 0, AttachEntry::kAtStart, 0, "cgroup_skb/egress:/sys/fs/cgroup/a b"});
  s.entries.push_back({11, 9, AttachEntry::kCaptured, 12345, "xdp/eth0@netns:4026532174"});
  s.entries.push_back({12, 0, AttachEntry::kAtEnd, 99, std::string(13, 'x')});  // 13+1 -> 16 bytes
  s.links_lost = 3;
  return s;
}

// sample_attach() with one point named through a perf-event fd.
AttachSection with_holder() {
  AttachSection s = sample_attach();
  s.entries[0].pid = 4242;
  s.entries[0].comm = "bpftrace";
  s.perf_fds_lost = 2;
  s.fd_dirs_unreadable = 1;
  return s;
}
constexpr size_t kTail = 8 + 8 + 4 + 4;  // the counters and holder count after links_lost

TEST(AttachFeatureTest, RoundTripThroughTheFeatureTable) {
  Features f;
  f.attach = with_holder();
  auto sections = encode_features(f, {});
  ASSERT_EQ(sections.count(kFeatBpfprofAttach), 1u);
  EXPECT_EQ(sections[kFeatBpfprofAttach].size() % 8, 0u);
  Features back;
  std::vector<std::string> names;
  ASSERT_TRUE(decode_feature(kFeatBpfprofAttach, sections[kFeatBpfprofAttach], 0, back, names).ok());
  ASSERT_TRUE(back.attach.has_value());
  EXPECT_EQ(back.attach->entries, with_holder().entries);
  EXPECT_EQ(back.attach->entries[0].comm, "bpftrace");
  EXPECT_EQ(back.attach->links_lost, 3u);
  EXPECT_EQ(back.attach->perf_fds_lost, 2u);
  EXPECT_EQ(back.attach->fd_dirs_unreadable, 1u);
}

TEST(AttachFeatureTest, OlderSectionsWithoutHoldersAreRead) {
  std::vector<std::byte> bytes = encode_attach(with_holder());
  bytes.resize(bytes.size() - kTail - 24);  // what versions before the holders wrote
  auto old = decode_attach(bytes, 0);
  ASSERT_TRUE(old.ok()) << old.error().to_string();
  EXPECT_EQ(old->entries, sample_attach().entries);
  EXPECT_EQ(old->links_lost, 3u);
  EXPECT_EQ(old->perf_fds_lost, 0u);
}

TEST(AttachFeatureTest, AHolderOfNoEntryIsRefused) {
  std::vector<std::byte> bytes = encode_attach(with_holder());
  const uint32_t index = 4;  // of 4 entries
  std::memcpy(bytes.data() + bytes.size() - 24, &index, 4);
  auto r = decode_attach(bytes, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kBadRecord);
  const uint32_t many = 1000;  // holders beyond the bytes left
  std::memcpy(bytes.data() + bytes.size() - 24 - 8, &many, 4);
  r = decode_attach(bytes, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kTruncated);
}

TEST(AttachFeatureTest, OlderSectionsWithoutLinksLostAreRead) {
  std::vector<std::byte> bytes = encode_attach(sample_attach());
  bytes.resize(bytes.size() - kTail - 8);  // what versions before the counter wrote
  auto old = decode_attach(bytes, 0);
  ASSERT_TRUE(old.ok()) << old.error().to_string();
  EXPECT_EQ(old->entries, sample_attach().entries);
  EXPECT_EQ(old->links_lost, 0u);
  // A counter cut short is an error, not a guess.
  bytes.resize(bytes.size() + 4);
  EXPECT_FALSE(decode_attach(bytes, 0).ok());
}

TEST(AttachFeatureTest, AnEmptySectionSaysNoneKnownNotAbsent) {
  Features back;
  std::vector<std::string> names;
  ASSERT_TRUE(decode_feature(kFeatBpfprofAttach, encode_attach({}), 0, back, names).ok());
  ASSERT_TRUE(back.attach.has_value());
  EXPECT_TRUE(back.attach->entries.empty());
}

TEST(AttachFeatureTest, HostileSectionsAreRefusedWithTheOffset) {
  std::vector<std::byte> bytes = encode_attach(sample_attach());
  // A count beyond what the section holds.
  std::vector<std::byte> many = bytes;
  const uint32_t huge = 1000000;
  std::memcpy(many.data() + 4, &huge, 4);
  auto r = decode_attach(many, 100);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kTruncated);
  EXPECT_EQ(r.error().offset, std::optional<uint64_t>(108));
  // Cut inside the last entry's point.
  auto cut = decode_attach(Bytes(bytes).first(bytes.size() - kTail - 8 - 3), 0);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().code, Errc::kTruncated);
  // Another version.
  std::vector<std::byte> v2 = bytes;
  v2[0] = std::byte{2};
  auto other = decode_attach(v2, 0);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code, Errc::kUnsupported);
  // A point length above the limit.
  std::vector<std::byte> long_point = bytes;
  const uint32_t len = 1u << 20;
  std::memcpy(long_point.data() + 8 + 12, &len, 4);
  auto bad = decode_attach(long_point, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::kBadRecord);
}

}  // namespace
}  // namespace bpfprof::perfdata
