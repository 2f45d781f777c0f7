// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "perfdata/features.h"
#include "perfdata/file_format.h"

namespace bpfprof::perfdata {
namespace {

TEST(FeatureStringTest, PadsToSixtyFourWithNul) {
  std::vector<std::byte> out;
  encode_string(out, "x86_64");
  ASSERT_EQ(out.size(), 4u + 64);
  uint32_t len;
  std::memcpy(&len, out.data(), 4);
  EXPECT_EQ(len, 64u);
  out.clear();
  encode_string(out, std::string(64, 'a'));  // 65 with the NUL -> 128
  EXPECT_EQ(out.size(), 4u + 128);
  ByteCursor c(out);
  auto s = decode_string(c, "s");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, std::string(64, 'a'));
  EXPECT_EQ(c.remaining(), 0u);
}

TEST(FeatureStringTest, DecodeRejectsLengthPastEnd) {
  std::vector<std::byte> out;
  append_pod(out, uint32_t{100});
  out.resize(20);
  ByteCursor c(out, 0x40);
  auto s = decode_string(c, "HOSTNAME");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, Errc::kTruncated);
  EXPECT_EQ(*s.error().offset, 0x44u);
}

TEST(FeaturesTest, EncodeDecodeEachKnownSection) {
  Features f;
  f.hostname = "host";
  f.osrelease = "6.1.0";
  f.version = "bpfprof 0.1.0";
  f.arch = "x86_64";
  f.nr_cpus_avail = 8;
  f.nr_cpus_online = 6;
  f.cmdline = {"/usr/bin/bpfprof", "record", "-a"};
  f.clockid_res_ns = 1;
  f.first_sample_time = 10;
  f.last_sample_time = 20;
  f.other[kFeatCpuDesc] = {std::byte{1}, std::byte{2}};
  f.other[kFeatHostname] = {std::byte{9}};  // typed field wins
  auto sections = encode_features(f, {});
  std::vector<int> feats;
  for (auto& [feat, bytes] : sections) feats.push_back(feat);
  EXPECT_EQ(feats, (std::vector<int>{kFeatHostname, kFeatOsRelease, kFeatVersion, kFeatArch,
                                     kFeatNrCpus, kFeatCpuDesc, kFeatCmdline, kFeatSampleTime,
                                     kFeatClockId}));
  Features back;
  std::vector<std::string> names;
  for (auto& [feat, bytes] : sections) {
    Status s = decode_feature(feat, bytes, 0, back, names);
    ASSERT_TRUE(s.ok()) << feat << ": " << s.error().to_string();
  }
  EXPECT_EQ(back.hostname, f.hostname);
  EXPECT_EQ(back.osrelease, f.osrelease);
  EXPECT_EQ(back.version, f.version);
  EXPECT_EQ(back.arch, f.arch);
  EXPECT_EQ(back.nr_cpus_avail, 8u);
  EXPECT_EQ(back.nr_cpus_online, 6u);
  EXPECT_EQ(back.cmdline, f.cmdline);
  EXPECT_EQ(back.clockid_res_ns, 1u);
  EXPECT_EQ(back.first_sample_time, 10u);
  EXPECT_EQ(back.last_sample_time, 20u);
  EXPECT_EQ(back.other[kFeatCpuDesc], f.other[kFeatCpuDesc]);
}

// Section 255: the vDSO image comes back as it went in, padded to 8; a
// size past the section's end, or another version, is an error.
TEST(FeaturesTest, VdsoSectionRoundTripsAndRefusesBadSizes) {
  std::vector<std::byte> image(13);
  for (size_t i = 0; i < image.size(); i++) image[i] = static_cast<std::byte>(i * 7 + 1);
  const std::vector<std::byte> section = encode_vdso(image);
  EXPECT_EQ(section.size() % 8, 0u);
  auto back = decode_vdso(section, 0x100);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_TRUE(std::equal(back->begin(), back->end(), image.begin(), image.end()));
  std::vector<std::byte> cut(section.begin(), section.begin() + 16 + 5);
  auto short_one = decode_vdso(cut, 0x100);
  ASSERT_FALSE(short_one.ok());
  EXPECT_NE(short_one.error().to_string().find("VDSO image"), std::string::npos)
      << short_one.error().to_string();
  std::vector<std::byte> v2 = section;
  v2[0] = std::byte{2};
  EXPECT_FALSE(decode_vdso(v2, 0).ok());
  EXPECT_FALSE(decode_vdso({}, 0).ok());
}

TEST(FeaturesTest, CmdlineWithHugeCountFails) {
  std::vector<std::byte> b;
  append_pod(b, uint32_t{0xffffffff});
  Features f;
  std::vector<std::string> names;
  Status s = decode_feature(kFeatCmdline, b, 0x100, f, names);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(*s.error().offset, 0x104u);
}

TEST(HostFeaturesTest, DescribesThisMachine) {
  Features f = host_features();
  ASSERT_TRUE(f.hostname && f.osrelease && f.arch && f.version);
  EXPECT_EQ(f.version->rfind("bpfprof ", 0), 0u);
  EXPECT_NE(*f.version, "bpfprof unknown");
  ASSERT_TRUE(f.nr_cpus_avail && f.nr_cpus_online);
  EXPECT_GE(*f.nr_cpus_avail, *f.nr_cpus_online);
  EXPECT_GE(*f.nr_cpus_online, 1u);
  ASSERT_TRUE(f.clockid_res_ns);
  EXPECT_GE(*f.clockid_res_ns, 1u);
}

}  // namespace
}  // namespace bpfprof::perfdata
