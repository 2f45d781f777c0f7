// SPDX-License-Identifier: Apache-2.0
// Section 248 (each program's bpf_metadata_* variables): its codec, pieces
// that add to a program's list, its damage (impossible sizes are one error
// naming the offset, the rest of the file reads), and the variables reaching
// each BPF_PROG_INFO entry from a closed file's section and from a killed
// recorder's in-stream pieces.
#include "perfdata/metadata_feature.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

#include "perfdata/features.h"
#include "perfdata/reader.h"
#include "perfdata/writer.h"
#include "testing/perfdata_fixtures.h"
#include "testing/subprocess.h"

namespace bpfprof::perfdata {
namespace {

using bpfprof::testing::ByteVec;

ProgramMetadata two_programs() {
  return {{7, {{"version", "1.2.3"}, {"build", "42", bpf::MetadataKind::kNumber}}},
          {9, {{"owner", ""}, {"on", "true", bpf::MetadataKind::kBool}}}};
}

TEST(MetadataFeatureTest, RoundTrip) {
  ProgramMetadata m = two_programs();
  m[11] = {{"long", std::string(300, 'x')},
           {"utf8", "gr\xc3\xbc\xc3\x9f"},
           {"printed", "\"1.2\"", bpf::MetadataKind::kPrinted}};
  const ByteVec bytes = encode_metadata(m);
  // Header, three programs, seven variables (12 bytes of sizes and kind, then
  // the text padded to 4).
  EXPECT_EQ(bytes.size(), 8u + 3 * 8 + (12 + 12) + (12 + 8) + (12 + 8) + (12 + 8) + (12 + 304) +
                              (12 + 12) + (12 + 12));
  ProgramMetadata back;
  ASSERT_TRUE(decode_metadata(bytes, 0, back).ok());
  EXPECT_EQ(back, m);
}

TEST(MetadataFeatureTest, ALaterPieceAddsOnlyTheVariablesAProgramLacks) {
  ProgramMetadata out;
  ASSERT_TRUE(decode_metadata(encode_metadata(two_programs()), 0, out).ok());
  const ProgramMetadata later = {{7, {{"build", "43"}, {"commit", "abc"}}}};
  ASSERT_TRUE(decode_metadata(encode_metadata(later), 0, out).ok());
  EXPECT_EQ(out.at(7), (bpf::Metadata{{"version", "1.2.3"},
                                      {"build", "42", bpf::MetadataKind::kNumber},
                                      {"commit", "abc"}}));
  EXPECT_EQ(out.at(9), two_programs().at(9));
}

TEST(MetadataFeatureTest, TheWriterCutsValuesAtTheLimit) {
  const ProgramMetadata m = {{7, {{"big", std::string(kMaxMetadataText + 100, 'y')}}}};
  ProgramMetadata back;
  ASSERT_TRUE(decode_metadata(encode_metadata(m), 0, back).ok());
  EXPECT_EQ(back.at(7).at(0).value, std::string(kMaxMetadataText, 'y'));
}

// Program 7's section, then a second program (id 8) whose first variable
// claims `name_len` / `value_len` bytes, with `nr` variables.
ByteVec damaged(uint32_t nr, uint32_t name_len, uint32_t value_len) {
  ByteVec b = encode_metadata({{7, {{"version", "1"}}}});
  const uint32_t programs = 2;
  std::memcpy(b.data() + 4, &programs, 4);
  append_pod(b, uint32_t{8});
  append_pod(b, nr);
  append_pod(b, name_len);
  append_pod(b, value_len);
  append_pod(b, uint32_t{0});  // kind
  b.resize(b.size() + 8);
  return b;
}

TEST(MetadataFeatureTest, ImpossibleSizesAreOneErrorAndKeepWhatCameBefore) {
  const size_t program8_at = 8 + 8 + 12 + 8;  // header, program 7 and its variable
  ProgramMetadata out;
  Status too_long = decode_metadata(damaged(1, 5000, 1), 1000, out);
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.error().offset, std::optional<uint64_t>(1000 + program8_at + 8));
  EXPECT_NE(too_long.error().message.find("name of 5000 and value of 1 bytes; at most 4096"),
            std::string::npos)
      << too_long.error().message;
  EXPECT_EQ(too_long.error().to_string().find('\n'), std::string::npos);
  ASSERT_EQ(out.size(), 1u);  // program 7 stays
  EXPECT_EQ(out.at(7), (bpf::Metadata{{"version", "1"}}));

  out.clear();
  Status too_many = decode_metadata(damaged(1u << 30, 1, 1), 0, out);
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.error().offset, std::optional<uint64_t>(program8_at));
  EXPECT_NE(too_many.error().message.find("1073741824 variables in 20 bytes"), std::string::npos)
      << too_many.error().message;
  EXPECT_EQ(out.size(), 1u);

  out.clear();
  Status past_end = decode_metadata(damaged(1, 4, 4000), 0, out);
  ASSERT_FALSE(past_end.ok());
  EXPECT_EQ(out.size(), 1u);

  out.clear();
  ByteVec v3 = encode_metadata(two_programs());
  v3[0] = std::byte{3};
  Status version = decode_metadata(v3, 0, out);
  ASSERT_FALSE(version.ok());
  EXPECT_NE(version.error().message.find("METADATA version 3"), std::string::npos);
  EXPECT_TRUE(out.empty());
}

TEST(MetadataFeatureTest, VersionOneHasNoKindsEveryValueAString) {
  // As bpfprof wrote 248 before kinds: program 7, {"build", "42"}.
  ByteVec b;
  append_pod(b, uint32_t{1});
  append_pod(b, uint32_t{1});
  append_pod(b, uint32_t{7});
  append_pod(b, uint32_t{1});
  append_pod(b, uint32_t{5});
  append_pod(b, uint32_t{2});
  for (char c : std::string("build42")) b.push_back(static_cast<std::byte>(c));
  b.resize(b.size() + 1);
  ProgramMetadata out;
  ASSERT_TRUE(decode_metadata(b, 0, out).ok());
  EXPECT_EQ(out.at(7), (bpf::Metadata{{"build", "42", bpf::MetadataKind::kText}}));
}

TEST(MetadataFeatureTest, AKindThisVersionDoesNotKnowIsAString) {
  ByteVec b = encode_metadata({{7, {{"build", "42", bpf::MetadataKind::kNumber}}}});
  const uint32_t kind = 99;
  std::memcpy(b.data() + 8 + 8 + 8, &kind, 4);
  ProgramMetadata out;
  ASSERT_TRUE(decode_metadata(b, 0, out).ok());
  EXPECT_EQ(out.at(7), (bpf::Metadata{{"build", "42"}}));
}

TEST(MetadataFeatureTest, ANumberCutAtTheLimitIsAString) {
  const ProgramMetadata m = {
      {7, {{"n", std::string(kMaxMetadataText + 1, '1'), bpf::MetadataKind::kNumber}}}};
  ProgramMetadata back;
  ASSERT_TRUE(decode_metadata(encode_metadata(m), 0, back).ok());
  EXPECT_EQ(back.at(7).at(0).kind, bpf::MetadataKind::kText);
}

ByteVec read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ByteVec bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

// A recording with programs 7 and 9 (metadata in two pieces, as a recorder
// hands the variables of maps bound after the load) and 10 (none): their
// BPF_PROG_INFO and metadata in-stream, and the sections if `close`.
ByteVec recording(bool close) {
  bpfprof::testing::TempDir dir;
  const std::string path = dir.file("metadata.data");
  auto w = FileWriter::create(path, bpfprof::testing::two_attrs());
  BPFPROF_CHECK(w.ok());
  std::vector<bpf::ProgInfo> progs = {bpfprof::testing::demo_prog(7, 0xffffffffc0001000),
                                      bpfprof::testing::demo_prog(9, 0xffffffffc0002000),
                                      bpfprof::testing::demo_prog(10, 0xffffffffc0003000)};
  BPFPROF_CHECK(w->append_in_stream(kFeatBpfProgInfo, encode_bpf_prog_info(progs)).ok());
  ProgramMetadata first = two_programs();
  first[7].pop_back();
  BPFPROF_CHECK(w->append_in_stream(kFeatBpfprofMetadata, encode_metadata(first)).ok());
  BPFPROF_CHECK(w->finish_round().ok());
  BPFPROF_CHECK(
      w->append_in_stream(kFeatBpfprofMetadata, encode_metadata({{7, {two_programs()[7][1]}}}))
          .ok());
  BPFPROF_CHECK(w->finish_round().ok());
  if (close) {
    Features f;
    f.bpf_prog_info = progs;
    attach_metadata(two_programs(), f.bpf_prog_info);
    BPFPROF_CHECK(w->close(f).ok());
  }
  return read_all(path);
}

void expect_metadata_attached(const FileReader& r) {
  const std::vector<bpf::ProgInfo>& infos = r.features().bpf_prog_info;
  ASSERT_EQ(infos.size(), 3u);
  EXPECT_EQ(infos[0].metadata, two_programs().at(7));
  EXPECT_EQ(infos[1].metadata, two_programs().at(9));
  EXPECT_TRUE(infos[2].metadata.empty());
}

TEST(MetadataFeatureTest, AClosedFilesSectionGivesEachProgramItsVariables) {
  auto r = FileReader::from_bytes(recording(true));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE(r->features_in_stream());
  EXPECT_TRUE(r->feature_errors().empty());
  EXPECT_EQ(r->stats().unknown_features, 0u);
  expect_metadata_attached(*r);
}

TEST(MetadataFeatureTest, AKilledRecordersPiecesGiveEachProgramItsVariables) {
  auto r = FileReader::from_bytes(recording(false));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_TRUE(r->features_in_stream());
  EXPECT_TRUE(r->feature_errors().empty());
  expect_metadata_attached(*r);
}

TEST(MetadataFeatureTest, ADamagedSectionIsOneErrorAndTheRestOfTheFileReads) {
  ByteVec file = recording(true);
  const ByteVec section = encode_metadata(two_programs());
  auto at = std::search(file.begin(), file.end(), section.begin(), section.end());
  ASSERT_NE(at, file.end());
  // Program 7's first variable's name length made impossible.
  const size_t name_len_at = static_cast<size_t>(at - file.begin()) + 8 + 8;
  const uint32_t absurd = 1u << 20;
  std::memcpy(file.data() + name_len_at, &absurd, 4);
  auto r = FileReader::from_bytes(file);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_EQ(r->feature_errors().size(), 1u);
  const Error& e = r->feature_errors()[0];
  EXPECT_EQ(e.offset, std::optional<uint64_t>(name_len_at));
  EXPECT_EQ(e.to_string().find('\n'), std::string::npos);
  EXPECT_TRUE(r->damaged_features().contains(kFeatBpfprofMetadata));
  // The programs' info is all there, without variables.
  ASSERT_EQ(r->features().bpf_prog_info.size(), 3u);
  for (const bpf::ProgInfo& p : r->features().bpf_prog_info) EXPECT_TRUE(p.metadata.empty());
  EXPECT_GT(r->features().bpf_prog_info[0].jited_insns.size(), 0u);
}

}  // namespace
}  // namespace bpfprof::perfdata
