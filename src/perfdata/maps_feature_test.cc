// SPDX-License-Identifier: Apache-2.0
// Section 249 (the maps of each program): its codec, its damage (impossible
// sizes are one error naming the offset, the rest of the file reads), and
// the maps reaching each BPF_PROG_INFO entry from a closed file's section
// and from a killed recorder's in-stream pieces.
#include "perfdata/maps_feature.h"

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

bpf::MapInfo map_of(uint32_t id, uint32_t type, const std::string& name) {
  bpf::MapInfo m;
  m.id = id;
  m.type = type;
  m.key_size = 4;
  m.value_size = 8 * id;
  m.max_entries = 1000 + id;
  m.flags = id == 14 ? BPF_F_NO_PREALLOC : 0;
  m.name = name;
  m.addr = 0xffff888100000000 + id * 0x1000;
  m.value_addr = type == BPF_MAP_TYPE_ARRAY ? m.addr + 0x150 : 0;
  return m;
}

ProgramMaps two_programs() {
  return {
      {7, {map_of(14, BPF_MAP_TYPE_HASH, "counts"), map_of(15, BPF_MAP_TYPE_ARRAY, "prog.bss")}},
      {8, {}}};
}

TEST(MapsFeatureTest, RoundTrip) {
  ProgramMaps maps = two_programs();
  maps[9] = {map_of(16, BPF_MAP_TYPE_RINGBUF, "a_name_of_15chr")};
  const ByteVec bytes = encode_maps(maps);
  EXPECT_EQ(bytes.size(), 16u + 3 * 8 + 3 * 64);
  ProgramMaps back;
  ASSERT_TRUE(decode_maps(bytes, 0, back).ok());
  EXPECT_EQ(back, maps);
}

// Bytes of a section whose first program is `first` and whose second
// program (id 8) claims `nr_maps` maps of `entry` bytes each.
ByteVec damaged(uint32_t entry, uint32_t nr_maps) {
  ByteVec b = encode_maps({{7, {map_of(14, BPF_MAP_TYPE_HASH, "counts")}}});
  std::memcpy(b.data() + 4, &entry, 4);
  const uint32_t programs = 2;
  std::memcpy(b.data() + 8, &programs, 4);
  append_pod(b, uint32_t{8});
  append_pod(b, nr_maps);
  b.resize(b.size() + 64);
  return b;
}

TEST(MapsFeatureTest, ImpossibleSizesAreOneErrorAndKeepWhatCameBefore) {
  ProgramMaps out;
  Status too_many = decode_maps(damaged(64, 65), 1000, out);
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.error().offset, std::optional<uint64_t>(1000 + 16 + 8 + 64));
  EXPECT_NE(too_many.error().message.find("lists 65 maps; a program uses at most 64"),
            std::string::npos)
      << too_many.error().message;
  EXPECT_EQ(too_many.error().to_string().find('\n'), std::string::npos);
  ASSERT_EQ(out.size(), 1u);  // program 7 stays
  EXPECT_EQ(out.at(7).at(0).name, "counts");

  out.clear();
  Status past_end = decode_maps(damaged(64, 2), 0, out);
  ASSERT_FALSE(past_end.ok());
  EXPECT_NE(past_end.error().message.find("2 maps of 64 bytes, 64 left"), std::string::npos)
      << past_end.error().message;
  EXPECT_EQ(out.size(), 1u);

  out.clear();
  Status short_entry = decode_maps(damaged(24, 1), 0, out);
  ASSERT_FALSE(short_entry.ok());
  EXPECT_NE(short_entry.error().message.find("map_entry_size 24 is below 64"), std::string::npos);
  EXPECT_EQ(short_entry.error().offset, std::optional<uint64_t>(4));
  EXPECT_TRUE(out.empty());
}

TEST(MapsFeatureTest, ALaterPieceForAProgramAddsTheMapsBoundSince) {
  ProgramMaps out;
  ASSERT_TRUE(decode_maps(encode_maps(two_programs()), 0, out).ok());
  ProgramMaps later = {
      {7,
       {map_of(14, BPF_MAP_TYPE_HASH, "counts"), map_of(15, BPF_MAP_TYPE_ARRAY, "prog.bss"),
        map_of(16, BPF_MAP_TYPE_ARRAY, "prog.rodata")}}};
  ASSERT_TRUE(decode_maps(encode_maps(later), 0, out).ok());
  EXPECT_EQ(out.at(7), later.at(7));
  EXPECT_TRUE(out.at(8).empty());
}

TEST(MapsFeatureTest, LongerEntriesOfANewerWriterAreReadForWhatWeKnow) {
  ByteVec b = encode_maps({{7, {map_of(14, BPF_MAP_TYPE_HASH, "counts")}}});
  const uint32_t entry = 72;
  std::memcpy(b.data() + 4, &entry, 4);
  b.insert(b.end(), 8, std::byte{0x5a});  // the newer field
  ProgramMaps out;
  ASSERT_TRUE(decode_maps(b, 0, out).ok());
  EXPECT_EQ(out.at(7).at(0), map_of(14, BPF_MAP_TYPE_HASH, "counts"));
}

ByteVec read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ByteVec bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

// A recording with programs 7 (two maps), 8 (none) and 10 (maps not known):
// their BPF_PROG_INFO and maps in-stream, and the sections if `close`.
ByteVec recording(bool close) {
  bpfprof::testing::TempDir dir;
  const std::string path = dir.file("maps.data");
  auto w = FileWriter::create(path, bpfprof::testing::two_attrs());
  BPFPROF_CHECK(w.ok());
  std::vector<bpf::ProgInfo> progs = {bpfprof::testing::demo_prog(7, 0xffffffffc0001000),
                                      bpfprof::testing::demo_prog(8, 0xffffffffc0002000),
                                      bpfprof::testing::demo_prog(10, 0xffffffffc0003000)};
  progs[0].maps = two_programs().at(7);
  progs[1].maps.emplace();
  BPFPROF_CHECK(w->append_in_stream(kFeatBpfProgInfo, encode_bpf_prog_info(progs)).ok());
  BPFPROF_CHECK(w->append_in_stream(kFeatBpfprofMaps, encode_maps(program_maps(progs))).ok());
  BPFPROF_CHECK(w->finish_round().ok());
  if (close) {
    Features f;
    f.bpf_prog_info = progs;
    BPFPROF_CHECK(w->close(f).ok());
  }
  return read_all(path);
}

void expect_maps_attached(const FileReader& r) {
  const std::vector<bpf::ProgInfo>& infos = r.features().bpf_prog_info;
  ASSERT_EQ(infos.size(), 3u);
  ASSERT_TRUE(infos[0].maps.has_value());
  EXPECT_EQ(*infos[0].maps, two_programs().at(7));
  ASSERT_TRUE(infos[1].maps.has_value());
  EXPECT_TRUE(infos[1].maps->empty());
  EXPECT_FALSE(infos[2].maps.has_value());
}

TEST(MapsFeatureTest, AClosedFilesSectionGivesEachProgramItsMaps) {
  auto r = FileReader::from_bytes(recording(true));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE(r->features_in_stream());
  EXPECT_TRUE(r->feature_errors().empty());
  expect_maps_attached(*r);
}

TEST(MapsFeatureTest, AKilledRecordersPiecesGiveEachProgramItsMaps) {
  auto r = FileReader::from_bytes(recording(false));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_TRUE(r->features_in_stream());
  EXPECT_TRUE(r->feature_errors().empty());
  expect_maps_attached(*r);
}

TEST(MapsFeatureTest, ADamagedSectionIsOneErrorAndTheRestOfTheFileReads) {
  ByteVec file = recording(true);
  // The section's nr_maps of program 7 (its first entry) made impossible.
  const ByteVec section = encode_maps(two_programs());
  // The last copy: the section (the first is the in-stream piece).
  auto at = std::find_end(file.begin(), file.end(), section.begin(), section.end());
  ASSERT_NE(at, file.end());
  const size_t nr_maps_at = static_cast<size_t>(at - file.begin()) + 16 + 4;
  const uint32_t absurd = 1u << 30;
  std::memcpy(file.data() + nr_maps_at, &absurd, 4);
  auto r = FileReader::from_bytes(file);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_EQ(r->feature_errors().size(), 1u);
  const Error& e = r->feature_errors()[0];
  EXPECT_EQ(e.offset, std::optional<uint64_t>(nr_maps_at - 4));
  EXPECT_EQ(e.to_string().find('\n'), std::string::npos);
  EXPECT_TRUE(r->damaged_features().contains(kFeatBpfprofMaps));
  // The programs' info is all there; their maps are not known.
  ASSERT_EQ(r->features().bpf_prog_info.size(), 3u);
  for (const bpf::ProgInfo& p : r->features().bpf_prog_info) EXPECT_FALSE(p.maps.has_value());
  EXPECT_GT(r->features().bpf_prog_info[0].jited_insns.size(), 0u);
}

}  // namespace
}  // namespace bpfprof::perfdata
