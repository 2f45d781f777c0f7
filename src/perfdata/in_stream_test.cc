// SPDX-License-Identifier: Apache-2.0
// In-stream features: a file whose writer never closed (a killed recorder)
// reads its host, event names, BPF entries and kallsyms snapshot from the
// records; a closed file reads its sections and skips the records.
#include "perfdata/in_stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include "perfdata/file_format.h"
#include "perfdata/kallsyms_table.h"
#include "perfdata/reader.h"
#include "testing/perfdata_fixtures.h"
#include "perfdata/writer.h"
#include "testing/subprocess.h"

namespace bpfprof::perfdata {
namespace {

using bpfprof::testing::ByteVec;

ByteVec one_sample(uint64_t time) {
  bpfprof::testing::SampleValues s;
  s.id = testing::kSampleId;
  s.ip = 0xffffffffc0001010;
  s.pid = s.tid = 1;
  s.time = time;
  s.period = 1;
  return bpfprof::testing::sample_record(testing::kSampleType, s, perf::kMiscKernel);
}

// A BTF-less blob larger than one record: it travels in two chunks.
bpf::BtfBlob big_btf(uint32_t id) {
  bpf::BtfBlob b{id, std::vector<std::byte>(100000)};
  for (size_t i = 0; i < b.data.size(); ++i) b.data[i] = std::byte(i * 7);
  return b;
}

// Writes host features and two rounds of BPF entries in-stream, then
// either closes the file or leaves it as a SIGKILL would (plus half a round).
std::string write_file(const bpfprof::testing::TempDir& dir, bool close) {
  const std::string path = dir.file(close ? "closed.data" : "killed.data");
  auto w = FileWriter::create(path, testing::two_attrs());
  BPFPROF_CHECK(w.ok());
  Features host;
  host.hostname = "kept-host";
  host.arch = "x86_64";
  BPFPROF_CHECK(w->append_in_stream(host).ok());
  BPFPROF_CHECK(w->append(one_sample(1)).ok());
  BPFPROF_CHECK(w->append_in_stream(kFeatBpfProgInfo,
                                    encode_bpf_prog_info({testing::demo_prog(42, 0xffffffffc0001000)}))
                    .ok());
  // Attach points at start and at end: two blobs of section 254.
  BPFPROF_CHECK(w->append_in_stream(kFeatBpfprofAttach,
                                    encode_attach({{{42, 7, AttachEntry::kAtStart, 0, "raw_tp/a"}}}))
                    .ok());
  BPFPROF_CHECK(w->finish_round().ok());
  BPFPROF_CHECK(w->append(one_sample(2)).ok());
  BPFPROF_CHECK(w->append_in_stream(kFeatBpfprofAttach,
                                    encode_attach({{{43, 0, AttachEntry::kAtEnd, 5, "xdp/eth0"}}}))
                    .ok());
  BPFPROF_CHECK(w->append_in_stream(kFeatBpfProgInfo,
                                    encode_bpf_prog_info({testing::demo_prog(43, 0xffffffffc0002000)}))
                    .ok());
  BPFPROF_CHECK(w->append_in_stream(kFeatBpfBtf, encode_bpf_btf({big_btf(7)})).ok());
  BPFPROF_CHECK(w->finish_round().ok());
  if (close) {
    Features f = host;
    f.bpf_prog_info = {testing::demo_prog(42, 0xffffffffc0001000)};
    BPFPROF_CHECK(w->close(f).ok());
  } else {
    // Half a round reached the disk before the kill: never read.
    BPFPROF_CHECK(w->append(one_sample(3)).ok());
    BPFPROF_CHECK(w->append_in_stream(kFeatBpfProgInfo,
                                      encode_bpf_prog_info({testing::demo_prog(44, 0xffffffffc0003000)}))
                      .ok());
    BPFPROF_CHECK(w->append(ByteVec(100000)).ok());  // forces a write without a round
  }
  return path;
}

size_t samples_in(const FileReader& r) {
  size_t n = 0;
  EXPECT_TRUE(r.for_each_record([&](const perf::RecordView& v, uint64_t) {
                 EXPECT_NE(v.header.type, kRecordInStream);
                 n += v.header.type == perf::kRecordSample;
               }).ok());
  return n;
}

TEST(InStreamTest, AKilledWritersFileCarriesWhatItLearned) {
  bpfprof::testing::TempDir dir;
  auto r = FileReader::open(write_file(dir, false));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_TRUE(r->features_in_stream());
  EXPECT_TRUE(r->feature_errors().empty()) << r->feature_errors().front().to_string();
  EXPECT_EQ(r->features().hostname, std::optional<std::string>("kept-host"));
  EXPECT_EQ(r->features().arch, std::optional<std::string>("x86_64"));
  EXPECT_EQ(r->attrs()[0].name, testing::two_attrs()[0].name);
  ASSERT_EQ(r->features().bpf_prog_info.size(), 2u);  // 44's round never completed
  EXPECT_EQ(r->features().bpf_prog_info[0].id(), 42u);
  EXPECT_EQ(r->features().bpf_prog_info[1].id(), 43u);
  ASSERT_EQ(r->features().bpf_btf.size(), 1u);
  EXPECT_EQ(r->features().bpf_btf[0].data, big_btf(7).data);
  EXPECT_TRUE(r->has_feature(kFeatBpfBtf));
  EXPECT_EQ(samples_in(*r), 2u);
  EXPECT_TRUE(r->stats().unknown_record_types.empty());
  // The blobs of section 254 add up.
  ASSERT_TRUE(r->features().attach.has_value());
  const std::vector<AttachEntry> attach = {{42, 7, AttachEntry::kAtStart, 0, "raw_tp/a"},
                                           {43, 0, AttachEntry::kAtEnd, 5, "xdp/eth0"}};
  EXPECT_EQ(r->features().attach->entries, attach);
  EXPECT_EQ(r->stats().unknown_features, 0u);
}

TEST(InStreamTest, AClosedFileReadsItsSectionsAndSkipsTheRecords) {
  bpfprof::testing::TempDir dir;
  auto r = FileReader::open(write_file(dir, true));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE(r->features_in_stream());
  ASSERT_EQ(r->features().bpf_prog_info.size(), 1u);  // the section's, not the stream's
  EXPECT_TRUE(r->features().bpf_btf.empty());
  EXPECT_EQ(samples_in(*r), 2u);
  EXPECT_TRUE(r->stats().unknown_record_types.empty());
}

TEST(InStreamTest, ChunksOutOfOrderAreNamedNotTrusted) {
  ByteVec records;
  append_in_stream_records(records, kFeatBpfBtf, encode_bpf_btf({big_btf(9)}));
  // Two chunks: drop the first, so the second continues nothing.
  const uint16_t first = load_unaligned<uint16_t>(records.data() + 6);
  ByteVec second(records.begin() + first, records.end());
  InStreamCollector c;
  auto view = perf::record_at(second, 0, 1000);
  ASSERT_TRUE(view.ok());
  ASSERT_TRUE(is_in_stream(*view));
  Status s = c.add(*view);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().offset, std::optional<uint64_t>(1000));
  EXPECT_TRUE(c.blobs().empty());
  // The first alone: a blob cut short, reported by finish().
  auto head = perf::record_at(records, 0, 0);
  ASSERT_TRUE(head.ok());
  ASSERT_TRUE(c.add(*head).ok());
  EXPECT_FALSE(c.finish().ok());
  // Both in order: one blob.
  InStreamCollector whole;
  for (size_t pos = 0; pos < records.size();) {
    auto v = perf::record_at(records, pos, 0);
    ASSERT_TRUE(v.ok());
    ASSERT_TRUE(whole.add(*v).ok());
    pos += v->header.size;
  }
  ASSERT_TRUE(whole.finish().ok());
  ASSERT_EQ(whole.blobs().size(), 1u);
  EXPECT_EQ(whole.blobs()[0].feat, kFeatBpfBtf);
}

// A blob of no bytes is one record, complete at once (and copies nothing:
// UBSan builds check that no null buffer reaches memcpy).
TEST(InStreamTest, AnEmptyBlobIsOneRecordAndComplete) {
  ByteVec records;
  append_in_stream_records(records, kFeatBpfBtf, Bytes{});
  InStreamCollector c;
  auto v = perf::record_at(records, 0, 0);
  ASSERT_TRUE(v.ok());
  ASSERT_EQ(v->header.size, records.size());
  ASSERT_TRUE(c.add(*v).ok());
  ASSERT_TRUE(c.finish().ok());
  ASSERT_EQ(c.blobs().size(), 1u);
  EXPECT_EQ(c.blobs()[0].feat, kFeatBpfBtf);
  EXPECT_TRUE(c.blobs()[0].bytes.empty());
}

// One damaged chunk in the middle of a blob of many (a kallsyms snapshot is
// ~70): one error, the rest of that blob dropped quietly, the next blob
// read, and the feature named as damaged.
TEST(InStreamTest, OneDamagedChunkIsOneError) {
  std::vector<std::byte> payload(10 * 65000);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = std::byte(i * 13);
  ByteVec records;
  append_in_stream_records(records, kFeatBpfprofKallsyms, payload);
  std::vector<size_t> starts;
  for (size_t pos = 0; pos < records.size(); pos += load_unaligned<uint16_t>(records.data() + pos + 6))
    starts.push_back(pos);
  ASSERT_GT(starts.size(), 5u);
  // The third chunk claims another offset.
  const uint64_t wrong = 12345;
  std::memcpy(records.data() + starts[2] + 32, &wrong, sizeof wrong);
  append_in_stream_records(records, kFeatBpfBtf, encode_bpf_btf({big_btf(3)}));
  InStreamCollector c;
  int errors = 0;
  for (size_t pos = 0; pos < records.size();) {
    auto v = perf::record_at(records, pos, 0);
    ASSERT_TRUE(v.ok());
    errors += !c.add(*v).ok();
    pos += v->header.size;
  }
  EXPECT_TRUE(c.finish().ok());
  EXPECT_EQ(errors, 1);
  ASSERT_EQ(c.blobs().size(), 1u);
  EXPECT_EQ(c.blobs()[0].feat, kFeatBpfBtf);
  EXPECT_EQ(c.dropped(), std::set<int>{kFeatBpfprofKallsyms});
}

// The kallsyms snapshot written in-stream is stored once: the closed file's
// section 250 says where the records are, and the reader puts their blob in
// its place; a section whose bytes differ is written whole.
TEST(InStreamTest, TheKallsymsSnapshotIsStoredOnce) {
  bpfprof::testing::TempDir dir;
  std::string text;
  for (int i = 0; i < 5000; ++i)
    text += "ffffffff8" + std::to_string(1000000 + i) + " T function_" + std::to_string(i) + "\n";
  const std::vector<std::byte> packed = encode_kallsyms_compact(text);
  for (bool same : {true, false}) {
    SCOPED_TRACE(same);
    const std::string path = dir.file(same ? "once.data" : "twice.data");
    auto w = FileWriter::create(path, testing::two_attrs());
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->append(one_sample(1)).ok());
    ASSERT_TRUE(w->append_in_stream(kFeatBpfprofKallsyms, packed).ok());
    ASSERT_TRUE(w->append(one_sample(2)).ok());
    ASSERT_TRUE(w->finish_round().ok());
    Features f;
    f.hostname = "h";
    f.other[kFeatBpfprofKallsyms] = same ? packed : encode_kallsyms(text);
    ASSERT_TRUE(w->close(f).ok());
    auto r = FileReader::open(path);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_TRUE(r->feature_errors().empty()) << r->feature_errors().front().to_string();
    const uint64_t file_size = std::filesystem::file_size(path);
    if (same) {
      EXPECT_LT(file_size, r->data_offset() + r->data_size() + 1000) << "one copy";
      EXPECT_TRUE(std::equal(r->features().kallsyms_packed.begin(), r->features().kallsyms_packed.end(),
                             packed.begin(), packed.end()));
    } else {
      EXPECT_GT(file_size, r->data_offset() + r->data_size() + packed.size());
    }
    auto t = KallsymsTable::open(r->features().kallsyms_packed, r->features().kallsyms_packed_at);
    ASSERT_TRUE(t.ok()) << t.error().to_string();
    EXPECT_EQ(t->size(), 5000u);
    EXPECT_EQ(samples_in(*r), 2u);
  }
  // A reference outside the data, or to records that are not the snapshot:
  // one error, the snapshot named damaged, the rest of the file read.
  const std::string path = dir.file("once.data");
  ByteVec bytes = bpfprof::testing::read_file_bytes(path);
  auto r = FileReader::from_bytes(bytes);
  ASSERT_TRUE(r.ok());
  // Section 250 (version 4, 24 bytes) found by its words: 4, 0, then an
  // offset in the data.
  for (size_t at = r->data_offset() + r->data_size(); at + 24 <= bytes.size(); ++at) {
    if (load_unaligned<uint32_t>(bytes.data() + at) == 4 && load_unaligned<uint32_t>(bytes.data() + at + 4) == 0 &&
        load_unaligned<uint64_t>(bytes.data() + at + 8) >= r->data_offset() &&
        load_unaligned<uint64_t>(bytes.data() + at + 8) < r->data_offset() + r->data_size()) {
      const uint64_t outside = bytes.size() + 100;
      std::memcpy(bytes.data() + at + 8, &outside, sizeof outside);
      break;
    }
  }
  auto bad = FileReader::from_bytes(bytes);
  ASSERT_TRUE(bad.ok()) << bad.error().to_string();
  ASSERT_EQ(bad->feature_errors().size(), 1u);
  EXPECT_NE(bad->feature_errors()[0].message.find("outside the data"), std::string::npos);
  EXPECT_TRUE(bad->damaged_features().contains(kFeatBpfprofKallsyms));
  EXPECT_TRUE(bad->features().kallsyms_packed.empty());
  EXPECT_EQ(bad->features().hostname, "h");
}

}  // namespace
}  // namespace bpfprof::perfdata
