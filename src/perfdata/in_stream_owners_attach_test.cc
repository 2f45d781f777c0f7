// SPDX-License-Identifier: Apache-2.0
// Sections 253 (owners: holders at start, then the loaders' cgroups) and 254
// (attach points, each piece with the links_lost so far) arrive in the data
// in pieces as the recorder learns them. A file whose recorder was killed has
// only the pieces: the reader joins them. A closed file has the sections too:
// those are read and the pieces are not. A piece that does not decode, or a
// blob the file ends inside, is an error naming its offset; the others stay.
#include <cstring>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "perfdata/in_stream.h"
#include "perfdata/reader.h"
#include "perfdata/writer.h"
#include "testing/perfdata_fixtures.h"
#include "testing/subprocess.h"

namespace bpfprof::perfdata {
namespace {

using bpfprof::testing::ByteVec;

const AttachEntry kStart{10, 7, AttachEntry::kAtStart, 0, "raw_tp/task_rename"};
const AttachEntry kCaptured{20, 8, AttachEntry::kCaptured, 100,
                            "tracepoint/syscalls/sys_enter_getppid"};
const AttachEntry kById{21, 9, AttachEntry::kById, 200, "perf_event"};
const AttachEntry kEnd{21, 9, AttachEntry::kAtEnd, 300, "perf_event"};

OwnersSection holders_at_start() {
  OwnersSection o;
  o.scanned = {10, 11};
  o.holders = {{10, 100, ProgramHolder::kProgFd | ProgramHolder::kLinkFd, "loader", 5}};
  return o;
}

OwnersSection loaders(std::vector<ProgramLoader> l) {
  OwnersSection o;
  o.loaders = std::move(l);
  return o;
}

ByteVec attach_piece(std::vector<AttachEntry> entries, uint64_t links_lost) {
  return encode_attach(AttachSection{std::move(entries), links_lost});
}

struct Piece {
  int feat;
  ByteVec payload;
};

// A recording's file: each piece in a round of its own (with a sample, as
// the recorder's rounds have), then the sections if `closing` is set.
ByteVec write_file(const std::vector<Piece>& pieces, const Features* closing) {
  bpfprof::testing::TempDir dir;
  const std::string path = dir.file("pieces.data");
  auto w = FileWriter::create(path, testing::two_attrs());
  BPFPROF_CHECK(w.ok());
  uint64_t time = 1;
  for (const Piece& p : pieces) {
    bpfprof::testing::SampleValues s;
    s.id = testing::kSampleId;
    s.ip = 0xffffffffc0001010;
    s.pid = s.tid = 1;
    s.time = time++;
    s.period = 1;
    BPFPROF_CHECK(w->append(bpfprof::testing::sample_record(testing::kSampleType, s, 0)).ok());
    BPFPROF_CHECK(w->append_in_stream(p.feat, p.payload).ok());
    BPFPROF_CHECK(w->finish_round().ok());
  }
  if (closing) BPFPROF_CHECK(w->close(*closing).ok());
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  ByteVec bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

template <class T>
void put(ByteVec& b, size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof v);
}

// The header's data section: {offset, size} at byte 40.
constexpr size_t kDataSizeAt = 48;
uint64_t data_offset(const ByteVec& file) { return load_unaligned<uint64_t>(file.data() + 40); }
uint64_t data_size(const ByteVec& file) {
  return load_unaligned<uint64_t>(file.data() + kDataSizeAt);
}

// File offsets and sizes of the in-stream records in the data, in order.
std::vector<std::pair<uint64_t, uint64_t>> piece_records(const ByteVec& file) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  const Bytes data = Bytes(file).subspan(data_offset(file), data_size(file));
  for (size_t pos = 0; pos < data.size();) {
    auto r = perf::record_at(data, pos, data_offset(file));
    BPFPROF_CHECK(r.ok());
    if (is_in_stream(*r)) out.emplace_back(r->offset, r->header.size);
    pos += r->header.size;
  }
  return out;
}

void expect_holders_at_start(const OwnersSection& o) {
  EXPECT_EQ(o.scanned, (std::vector<uint32_t>{10, 11}));
  ASSERT_EQ(o.holders.size(), 1u);
  EXPECT_EQ(o.holders[0].prog_id, 10u);
  EXPECT_EQ(o.holders[0].pid, 100u);
  EXPECT_EQ(o.holders[0].flags, ProgramHolder::kProgFd | ProgramHolder::kLinkFd);
  EXPECT_EQ(o.holders[0].comm, "loader");
  EXPECT_EQ(o.holders[0].cgroup_id, 5u);
}

std::vector<std::pair<uint32_t, uint64_t>> loader_pairs(const OwnersSection& o) {
  std::vector<std::pair<uint32_t, uint64_t>> out;
  for (const ProgramLoader& l : o.loaders) out.emplace_back(l.prog_id, l.cgroup_id);
  return out;
}

// What a recorder writes while it runs: holders and attach points at start,
// then two rounds that learned a loader and a link each. links_lost is the
// count so far in each piece (the last one lower, so the largest, not the
// last, is seen to win).
std::vector<Piece> recording_pieces() {
  return {{kFeatBpfprofOwners, encode_owners(holders_at_start())},
          {kFeatBpfprofAttach, attach_piece({kStart}, 0)},
          {kFeatBpfprofOwners, encode_owners(loaders({{20, 7}}))},
          {kFeatBpfprofAttach, attach_piece({kCaptured}, 3)},
          {kFeatBpfprofOwners, encode_owners(loaders({{21, 9}}))},
          {kFeatBpfprofAttach, attach_piece({kById}, 2)}};
}

TEST(InStreamOwnersAttachTest, AKilledRecordersPiecesAreJoined) {
  const ByteVec file = write_file(recording_pieces(), nullptr);
  ASSERT_EQ(piece_records(file).size(), 6u);
  auto r = FileReader::from_bytes(file);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_TRUE(r->features_in_stream());
  EXPECT_TRUE(r->feature_errors().empty()) << r->feature_errors().front().to_string();
  EXPECT_TRUE(r->has_feature(kFeatBpfprofOwners));
  EXPECT_TRUE(r->has_feature(kFeatBpfprofAttach));
  const Features& f = r->features();
  ASSERT_TRUE(f.attach.has_value());
  EXPECT_EQ(f.attach->entries, (std::vector<AttachEntry>{kStart, kCaptured, kById}));
  EXPECT_EQ(f.attach->links_lost, 3u);
  ASSERT_TRUE(f.owners.has_value());
  expect_holders_at_start(*f.owners);
  EXPECT_EQ(loader_pairs(*f.owners),
            (std::vector<std::pair<uint32_t, uint64_t>>{{20, 7}, {21, 9}}));
  EXPECT_EQ(r->stats().unknown_features, 0u);
}

// The recorder's closing sections hold everything the pieces held and what
// came after: read once each, never added to the pieces.
TEST(InStreamOwnersAttachTest, AClosedFileReadsTheSectionsNotThePieces) {
  Features closing;
  closing.owners = holders_at_start();
  closing.owners->loaders = {{20, 7}, {21, 9}, {22, 11}};
  closing.attach = AttachSection{{kStart, kCaptured, kById, kEnd}, 4};
  const ByteVec file = write_file(recording_pieces(), &closing);
  ASSERT_EQ(piece_records(file).size(), 6u);
  auto r = FileReader::from_bytes(file);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE(r->features_in_stream());
  EXPECT_TRUE(r->feature_errors().empty()) << r->feature_errors().front().to_string();
  const Features& f = r->features();
  ASSERT_TRUE(f.attach.has_value());
  EXPECT_EQ(f.attach->entries, closing.attach->entries);
  EXPECT_EQ(f.attach->links_lost, 4u);
  ASSERT_TRUE(f.owners.has_value());
  expect_holders_at_start(*f.owners);
  EXPECT_EQ(loader_pairs(*f.owners),
            (std::vector<std::pair<uint32_t, uint64_t>>{{20, 7}, {21, 9}, {22, 11}}));
}

// Pieces that frame correctly but do not decode: each is one error at the
// offset of its bad field, and the pieces around it still count.
TEST(InStreamOwnersAttachTest, AMalformedPieceIsNamedAndSkipped) {
  ByteVec many = attach_piece({kCaptured}, 1);
  put<uint32_t>(many, 4, 1'000'000);  // count: far more than the bytes
  ByteVec narrow = encode_owners(loaders({{20, 7}}));
  put<uint32_t>(narrow, 4, 8);  // entry_size below the smallest
  ByteVec cut = attach_piece({kById}, 5);
  cut.erase(cut.end() - 24 - 4, cut.end());  // links_lost half there, nothing after it
  const std::vector<Piece> pieces = {{kFeatBpfprofAttach, attach_piece({kStart}, 1)},
                                     {kFeatBpfprofAttach, many},
                                     {kFeatBpfprofOwners, encode_owners(holders_at_start())},
                                     {kFeatBpfprofOwners, narrow},
                                     {kFeatBpfprofAttach, cut},
                                     {kFeatBpfprofAttach, attach_piece({kEnd}, 2)}};
  const ByteVec file = write_file(pieces, nullptr);
  const auto records = piece_records(file);
  ASSERT_EQ(records.size(), 6u);
  auto r = FileReader::from_bytes(file);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const Features& f = r->features();
  ASSERT_TRUE(f.attach.has_value());
  EXPECT_EQ(f.attach->entries, (std::vector<AttachEntry>{kStart, kEnd}));
  EXPECT_EQ(f.attach->links_lost, 2u) << "a piece that did not decode counted";
  ASSERT_TRUE(f.owners.has_value());
  expect_holders_at_start(*f.owners);
  EXPECT_TRUE(f.owners->loaders.empty());
  // Each error names the file offset of the field that is wrong: the
  // payload starts after the record's in-stream header.
  const std::vector<Error>& errors = r->feature_errors();
  ASSERT_EQ(errors.size(), 3u);
  struct Want {
    uint64_t at;
    const char* says;
  };
  const Want want[3] = {
      {records[1].first + kInStreamHeaderSize + 8, "ATTACH: 1000000 entries"},
      {records[3].first + kInStreamHeaderSize + 4, "OWNERS entry_size 8"},
      {records[4].first + kInStreamHeaderSize + cut.size() - 4, "ATTACH links_lost"}};
  for (size_t i = 0; i < 3; i++) {
    EXPECT_EQ(errors[i].offset, std::optional<uint64_t>(want[i].at)) << errors[i].to_string();
    EXPECT_NE(errors[i].message.find(want[i].says), std::string::npos) << errors[i].to_string();
  }
}

// Attach points of thousands of links make a piece larger than a record: it
// travels in chunks. A file that ends inside it (the recorder killed between
// its chunks, or inside one) keeps the pieces before it and names the blob
// it could not finish; the record cut short is never read past its end.
TEST(InStreamOwnersAttachTest, APieceCutShortIsNamedAndTheRestKept) {
  std::vector<AttachEntry> thousands;
  for (uint32_t i = 0; i < 3000; i++) {
    thousands.push_back({30 + i, 100 + i, AttachEntry::kById, 400 + i,
                         "tracepoint/syscalls/sys_enter_" + std::to_string(i)});
  }
  std::vector<Piece> pieces = recording_pieces();
  pieces.push_back({kFeatBpfprofAttach, attach_piece(thousands, 9)});
  const ByteVec whole = write_file(pieces, nullptr);
  const auto records = piece_records(whole);
  ASSERT_GE(records.size(), 8u) << "the big piece fits one record";
  const uint64_t big_at = records[6].first;
  const uint64_t second_chunk_at = records[7].first;
  ASSERT_EQ(second_chunk_at, big_at + records[6].second) << "its chunks back to back";

  // Whole: the big piece joins the others.
  {
    auto r = FileReader::from_bytes(whole);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_TRUE(r->feature_errors().empty()) << r->feature_errors().front().to_string();
    ASSERT_TRUE(r->features().attach.has_value());
    EXPECT_EQ(r->features().attach->entries.size(), 3u + thousands.size());
    EXPECT_EQ(r->features().attach->links_lost, 9u);
  }
  // Ends after its first chunk, then inside its second chunk's record.
  for (const uint64_t end : {second_chunk_at, second_chunk_at + 64}) {
    SCOPED_TRACE("data ends at " + std::to_string(end));
    ByteVec file(whole.begin(), whole.begin() + static_cast<ptrdiff_t>(end));
    put<uint64_t>(file, kDataSizeAt, end - data_offset(file));
    auto r = FileReader::from_bytes(file);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_TRUE(r->features_in_stream());
    ASSERT_TRUE(r->features().attach.has_value());
    EXPECT_EQ(r->features().attach->entries, (std::vector<AttachEntry>{kStart, kCaptured, kById}));
    EXPECT_EQ(r->features().attach->links_lost, 3u);
    ASSERT_TRUE(r->features().owners.has_value());
    EXPECT_EQ(r->features().owners->loaders.size(), 2u);
    const std::vector<Error>& errors = r->feature_errors();
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].code, Errc::kTruncated) << errors[0].to_string();
    EXPECT_EQ(errors[0].offset, std::optional<uint64_t>(big_at)) << errors[0].to_string();
    EXPECT_NE(errors[0].message.find("in-stream feature 254"), std::string::npos)
        << errors[0].to_string();
  }
}

}  // namespace
}  // namespace bpfprof::perfdata
