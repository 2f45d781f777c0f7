// SPDX-License-Identifier: Apache-2.0
// Hostile input: a valid file cut at every length and with single bytes
// flipped must give ok or an error, never a crash (run under
// -DBPFPROF_SANITIZE=ON to make "never" mean something).
#include <gtest/gtest.h>

#include <bit>
#include <cstring>

#include "perfdata/file_format.h"
#include "perfdata/reader.h"
#include "testing/perfdata_fixtures.h"
#include "perfdata/writer.h"
#include "testing/subprocess.h"

namespace bpfprof::perfdata {
namespace {

using bpfprof::testing::ByteVec;

// A small but complete file: two attrs, side-band and samples, every feature.
std::vector<std::byte> valid_file() {
  bpfprof::testing::TempDir dir;
  const std::string path = dir.file("v.data");
  auto w = FileWriter::create(path, testing::two_attrs());
  BPFPROF_CHECK(w.ok());
  bpfprof::testing::TrailerValues t{7, 7, 1, testing::kDummyId, 0, 0};
  BPFPROF_CHECK(w->append(bpfprof::testing::comm_record(testing::kSampleType, 7, 7, "x", t)).ok());
  BPFPROF_CHECK(w->append(bpfprof::testing::ksymbol_record(testing::kSampleType, 0xffffffffc0001000,
                                                           0x100, perf::kKsymTypeBpf, 0,
                                                           "bpf_prog_0123456789abcdef_demo", t))
                    .ok());
  bpfprof::testing::SampleValues s;
  s.id = testing::kSampleId;
  s.ip = 0xffffffffc0001010;
  BPFPROF_CHECK(w->append(bpfprof::testing::sample_record(testing::kSampleType, s)).ok());
  BPFPROF_CHECK(w->finish_round().ok());
  Features f;
  f.hostname = "h";
  f.nr_cpus_avail = 2;
  f.cmdline = {"a", "b"};
  f.first_sample_time = 1;
  f.last_sample_time = 2;
  f.bpf_prog_info = {testing::demo_prog(42, 0xffffffffc0001000)};
  f.bpf_btf = {{7, {std::byte{1}, std::byte{2}}}};
  BPFPROF_CHECK(w->close(f).ok());
  return bpfprof::testing::read_file_bytes(path);
}

// Opens and walks everything the reader offers; the result itself is not
// judged. Returns the number of records visited (0 if the open failed).
size_t exercise(Bytes bytes) {
  auto r = FileReader::from_bytes(bytes);
  if (!r.ok()) {
    EXPECT_FALSE(r.error().message.empty());
    return 0;
  }
  size_t n = 0;
  (void)r->for_each_record([&](const perf::RecordView& v, uint64_t) {
    const FileAttr* a = r->attr_for(v);
    if (a) (void)a->layout.time_of(v);
    ++n;
  });
  return n;
}

TEST(ReaderRobustnessTest, ValidFileIsClean) {
  auto bytes = valid_file();
  auto r = FileReader::from_bytes(bytes);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_TRUE(r->feature_errors().empty());
  EXPECT_EQ(r->features().bpf_prog_info.size(), 1u);
}

TEST(ReaderRobustnessTest, EveryTruncationIsOkOrError) {
  auto bytes = valid_file();
  for (size_t len = 0; len <= bytes.size(); ++len) {
    // A copy of exactly `len` bytes so a sanitizer sees any overread.
    std::vector<std::byte> cut(bytes.begin(), bytes.begin() + len);
    exercise(cut);
  }
}

TEST(ReaderRobustnessTest, EveryByteFlipIsOkOrError) {
  auto bytes = valid_file();
  size_t walked = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      std::vector<std::byte> bad = bytes;
      bad[i] ^= std::byte{mask};
      walked += exercise(bad) > 0;
    }
  }
  // Most flips land in record or feature payloads: those files still open,
  // so the loop really drives the record walk and the feature decoders.
  EXPECT_GT(walked, bytes.size());
}

TEST(ReaderRobustnessTest, SectionsPastEndNameOffsets) {
  auto bytes = valid_file();
  auto put = [&](size_t at, uint64_t v) { std::memcpy(bytes.data() + at, &v, 8); };
  auto copy = bytes;
  put(40 + 8, bytes.size());  // data.size past the end
  auto r = FileReader::from_bytes(bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kTruncated);
  EXPECT_EQ(*r.error().offset, 40u);
  bytes = copy;
  put(24, ~uint64_t{0} - 8);  // attrs.offset near 2^64: must not wrap
  r = FileReader::from_bytes(bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(*r.error().offset, 24u);
  bytes = copy;
  put(16, 0);  // attr_size 0
  r = FileReader::from_bytes(bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kBadRecord);
}

TEST(ReaderRobustnessTest, AttrSizeThatDoesNotDivideTheAttrsIsAnError) {
  auto bytes = valid_file();
  auto put = [&](size_t at, uint64_t v) { std::memcpy(bytes.data() + at, &v, 8); };
  const auto copy = bytes;
  // Two 144-byte entries (288 bytes): attr_size larger than the section, or
  // not a divisor of it, would leave every record without its attr.
  for (uint64_t attr_size : {uint64_t{289}, uint64_t{1} << 31, uint64_t{1} << 32,
                             uint64_t{1} << 63, uint64_t{100}}) {
    bytes = copy;
    put(16, attr_size);
    auto r = FileReader::from_bytes(bytes);
    ASSERT_FALSE(r.ok()) << attr_size;
    EXPECT_EQ(r.error().code, Errc::kBadRecord);
    EXPECT_EQ(r.error().offset, std::optional<uint64_t>(16)) << attr_size;
    EXPECT_EQ(r.error().message,
              "attr_size " + std::to_string(attr_size) + " does not divide attrs.size 288");
  }
  bytes = copy;
  put(32, 0);  // attrs.size 0
  auto r = FileReader::from_bytes(bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().offset, std::optional<uint64_t>(32));
  EXPECT_EQ(r.error().message, "attrs.size is 0: the file has no events");
}

TEST(ReaderRobustnessTest, LargerAttrThanOursIsAccepted) {
  // A newer perf's 136-byte attr (config3): attr_size 152, ids at entry + 136.
  auto bytes = valid_file();
  auto r0 = FileReader::from_bytes(bytes);
  ASSERT_TRUE(r0.ok());
  const uint64_t attrs_at = 104 + 32;
  std::vector<std::byte> out(bytes.begin(), bytes.begin() + attrs_at);
  for (int i = 0; i < 2; ++i) {
    auto entry = bytes.begin() + attrs_at + i * kAttrEntrySize;
    out.insert(out.end(), entry, entry + 128);
    out.insert(out.end(), 8, std::byte{0});  // config3
    out.insert(out.end(), entry + 128, entry + 144);
    uint32_t size136 = 136;
    std::memcpy(out.data() + out.size() - 152 + 4, &size136, 4);
  }
  // The data moved by 16 bytes: patch header and feature offsets simply by
  // keeping the old data offset in the header pointing at the shifted bytes.
  const uint64_t old_data = r0->data_offset();
  out.insert(out.end(), bytes.begin() + old_data, bytes.end());
  FileHeader h;
  std::memcpy(&h, out.data(), sizeof h);
  h.attr_size = 152;
  h.attrs.size = 2 * 152;
  h.data.offset += 16;
  std::memcpy(out.data(), &h, sizeof h);
  // Feature payload offsets in the table are absolute: shift them too.
  uint64_t table = h.data.offset + h.data.size;
  uint64_t nr = 0;
  for (uint64_t word : h.adds_features) nr += std::popcount(word);
  for (uint64_t p = table; p < table + 16 * nr; p += 16) {
    uint64_t off;
    std::memcpy(&off, out.data() + p, 8);
    if (off >= old_data && off < bytes.size()) {
      off += 16;
      std::memcpy(out.data() + p, &off, 8);
    }
  }
  auto r = FileReader::from_bytes(out);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_EQ(r->attrs().size(), 2u);
  EXPECT_EQ(r->attrs()[1].ids, (std::vector<uint64_t>{201, 202}));
  EXPECT_EQ(r->attrs()[0].attr.sample_type, testing::kSampleType);
}

}  // namespace
}  // namespace bpfprof::perfdata
