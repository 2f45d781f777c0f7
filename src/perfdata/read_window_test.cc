// SPDX-License-Identifier: Apache-2.0
// Record walks of an opened file read it in pieces with pread (not through
// the mapping). Records that straddle a piece, a record of the largest size,
// ranged walks and cut files must give exactly what a walk of the same bytes
// in memory gives.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <tuple>

#include "perfdata/reader.h"
#include "testing/perfdata_fixtures.h"
#include "perfdata/writer.h"
#include "testing/subprocess.h"

namespace bpfprof::perfdata {
namespace {

using bpfprof::testing::ByteVec;
constexpr uint64_t kChainType = testing::kSampleType | PERF_SAMPLE_CALLCHAIN;

struct Seen {
  uint64_t at;
  uint32_t type;
  ByteVec bytes;
  bool operator==(const Seen&) const = default;
};

std::vector<Seen> walk_all(const FileReader& r, Status* status) {
  std::vector<Seen> out;
  *status = r.for_each_record([&](const perf::RecordView& v, uint64_t at) {
    out.push_back({at, v.header.type, ByteVec(v.bytes.begin(), v.bytes.end())});
  });
  return out;
}

std::vector<Seen> walk_range(const FileReader& r, uint64_t begin, uint64_t end, Status* status) {
  std::vector<Seen> out;
  *status = r.for_each_record_in(begin, end, [&](const perf::RecordView& v, uint64_t at) {
    out.push_back({at, v.header.type, ByteVec(v.bytes.begin(), v.bytes.end())});
  });
  return out;
}

// A held walk: the views are copied only after the walk, so they must
// outlive its callback.
std::vector<Seen> walk_held(const FileReader& r, uint64_t begin, uint64_t end,
                            FileReader::HoldBytes& hold, Status* status) {
  std::vector<std::pair<uint64_t, perf::RecordView>> views;
  *status = r.for_each_record_in(
      begin, end, [&](const perf::RecordView& v, uint64_t at) { views.emplace_back(at, v); },
      nullptr, &hold);
  std::vector<Seen> out;
  for (const auto& [at, v] : views) {
    out.push_back({at, v.header.type, ByteVec(v.bytes.begin(), v.bytes.end())});
  }
  return out;
}

class ReadWindowTest : public ::testing::Test {
 protected:
  // About 2.5 MB of samples whose callchains vary in length (so records
  // cross every 512 KiB piece boundary at some odd offset), and one sample of
  // the largest size a record can have.
  void SetUp() override {
    path_ = dir_.file("w.data");
    auto attrs = testing::two_attrs();
    for (AttrEntry& a : attrs) a.attr.sample_type = kChainType;
    auto w = FileWriter::create(path_, attrs);
    ASSERT_TRUE(w.ok()) << w.error().to_string();
    for (uint32_t i = 0; i < 12000; i++) {
      bpfprof::testing::SampleValues s;
      s.id = testing::kSampleId;
      s.ip = 0xffffffff81000000 + i;
      s.pid = s.tid = 100 + i % 7;
      s.time = 1000 + i;
      s.period = 1;
      s.callchain.assign(1 + (i * 7919) % 50, 0xffffffff81000000 + i);
      if (i == 6000) s.callchain.assign((65535 - 8 - 6 * 8 - 8) / 8, 0x1234);
      ASSERT_TRUE(w->append(bpfprof::testing::sample_record(kChainType, s)).ok());
      if (i % 1000 == 999) {
        ASSERT_TRUE(w->finish_round().ok());
      }
      appended_++;
    }
    ASSERT_TRUE(w->close(Features{}).ok());
  }

  bpfprof::testing::TempDir dir_;
  std::string path_;
  size_t appended_ = 0;
};

TEST_F(ReadWindowTest, OpenedFileWalksLikeItsBytes) {
  auto opened = FileReader::open(path_);
  ASSERT_TRUE(opened.ok()) << opened.error().to_string();
  const ByteVec bytes = bpfprof::testing::read_file_bytes(path_);
  auto in_memory = FileReader::from_bytes(bytes);
  ASSERT_TRUE(in_memory.ok());
  ASSERT_GT(opened->data_size(), 2u << 20);  // several pieces

  Status a = ok_status(), b = ok_status();
  const std::vector<Seen> read = walk_all(*opened, &a);
  const std::vector<Seen> mapped = walk_all(*in_memory, &b);
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  ASSERT_TRUE(b.ok());
  size_t samples = 0;
  bool largest = false;
  for (const Seen& s : read) {
    if (s.type == perf::kRecordSample) samples++;
    if (s.bytes.size() > 65000) largest = true;
  }
  EXPECT_EQ(samples, appended_);
  EXPECT_TRUE(largest);
  EXPECT_TRUE(read == mapped);

  // Ranged walks (what report workers do) from record starts on both sides
  // of a piece boundary.
  const uint64_t begin = read[read.size() / 3].at, end = read[2 * read.size() / 3].at;
  const std::vector<Seen> part = walk_range(*opened, begin, end, &a);
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  const std::vector<Seen> part_mapped = walk_range(*in_memory, begin, end, &b);
  EXPECT_TRUE(part == part_mapped);
  ASSERT_FALSE(part.empty());
  EXPECT_EQ(part.front().at, begin);
  EXPECT_LT(part.back().at, end);
}

// Windows read whole into a held buffer (script's time windows): every
// range gives what the in-memory walk gives, with views valid after the
// walk, including a range whose last record is of the largest size and
// ends past the range, and the buffer reused for the next range.
TEST_F(ReadWindowTest, HeldRangesWalkLikeTheirBytes) {
  auto opened = FileReader::open(path_);
  ASSERT_TRUE(opened.ok()) << opened.error().to_string();
  const ByteVec bytes = bpfprof::testing::read_file_bytes(path_);
  auto in_memory = FileReader::from_bytes(bytes);
  ASSERT_TRUE(in_memory.ok());
  Status st = ok_status();
  const std::vector<Seen> all = walk_all(*opened, &st);
  ASSERT_TRUE(st.ok());
  size_t largest = 0;
  for (size_t i = 0; i < all.size(); i++) {
    if (all[i].bytes.size() > 65000) largest = i;
  }
  ASSERT_GT(largest, 10u);
  const uint64_t data_end = opened->data_offset() + opened->data_size();
  // [begin, end) pairs: the largest record last (its bytes run past `end`),
  // a range after it, the data's end.
  const std::vector<std::pair<uint64_t, uint64_t>> ranges = {
      {all[largest - 10].at, all[largest].at + 1},
      {all[largest + 1].at, all[largest + 500].at},
      {all[0].at, all[3].at},
      {all[all.size() - 40].at, data_end},
  };
  FileReader::HoldBytes hold;
  for (const auto& [begin, end] : ranges) {
    Status a = ok_status(), b = ok_status();
    const std::vector<Seen> held = walk_held(*opened, begin, end, hold, &a);
    const std::vector<Seen> expected = walk_range(*in_memory, begin, end, &b);
    ASSERT_TRUE(a.ok()) << a.error().to_string();
    ASSERT_TRUE(b.ok());
    ASSERT_FALSE(held.empty());
    EXPECT_TRUE(held == expected) << "range [" << begin << ", " << end << ")";
  }
  // The file shrinks under the reader: a held walk past its new end is an
  // error naming the offset, with the records before it intact.
  const uint64_t keep = all[largest + 100].at + 10;
  ASSERT_EQ(::truncate(path_.c_str(), static_cast<off_t>(keep)), 0);
  const std::vector<Seen> cut =
      walk_held(*opened, all[largest + 1].at, all[largest + 500].at, hold, &st);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Errc::kTruncated) << st.error().to_string();
  ASSERT_EQ(cut.size(), 99u);
  for (size_t i = 0; i < cut.size(); i++) EXPECT_TRUE(cut[i] == all[largest + 1 + i]);
}

// A recorder killed before it rewrote the header (data size 0, no feature
// bits) leaves a file that is read to its end; here it ends inside a record
// past the first piece.
TEST_F(ReadWindowTest, CutFileReadsLikeItsBytes) {
  auto whole = FileReader::open(path_);
  ASSERT_TRUE(whole.ok());
  Status st = ok_status();
  const std::vector<Seen> all = walk_all(*whole, &st);
  ASSERT_TRUE(st.ok());
  const Seen& victim = all[all.size() / 2];
  ASSERT_GT(victim.at, whole->data_offset() + (512u << 10));
  const uint64_t cut = victim.at + victim.bytes.size() / 2 + 1;

  ByteVec bytes = bpfprof::testing::read_file_bytes(path_);
  bytes.resize(cut);
  const uint64_t zero = 0;
  std::memcpy(bytes.data() + 48, &zero, sizeof zero);  // header.data.size
  std::memset(bytes.data() + 72, 0, 32);               // header.adds_features
  const std::string cut_path = dir_.file("cut.data");
  {
    std::ofstream out(cut_path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  auto opened = FileReader::open(cut_path);
  ASSERT_TRUE(opened.ok()) << opened.error().to_string();
  auto in_memory = FileReader::from_bytes(bytes);
  ASSERT_TRUE(in_memory.ok());
  EXPECT_TRUE(opened->truncated_header());
  Status a = ok_status(), b = ok_status();
  const std::vector<Seen> read = walk_all(*opened, &a);
  const std::vector<Seen> mapped = walk_all(*in_memory, &b);
  EXPECT_TRUE(a.ok()) << a.error().to_string();
  EXPECT_TRUE(b.ok());
  EXPECT_TRUE(read == mapped);
  ASSERT_FALSE(read.empty());
  EXPECT_EQ(read.back().at + read.back().bytes.size(), victim.at);
}

// The file shrinks under an open reader (another process truncates it): the
// walk ends with an error naming the offset, never a crash.
TEST_F(ReadWindowTest, FileShrunkAfterOpenIsAnError) {
  auto opened = FileReader::open(path_);
  ASSERT_TRUE(opened.ok());
  const uint64_t keep = opened->data_offset() + (700u << 10);
  ASSERT_EQ(::truncate(path_.c_str(), static_cast<off_t>(keep)), 0);
  Status st = ok_status();
  const std::vector<Seen> read = walk_all(*opened, &st);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Errc::kTruncated);
  ASSERT_FALSE(read.empty());
  EXPECT_LE(read.back().at + read.back().bytes.size(), keep);
  EXPECT_NE(st.error().to_string().find("offset"), std::string::npos) << st.error().to_string();
}

}  // namespace
}  // namespace bpfprof::perfdata
