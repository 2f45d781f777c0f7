// SPDX-License-Identifier: Apache-2.0
// `record -z` on the writer side: records handed to append_compressed() in
// spans that cut records (a wrapped ring) come back from the reader one for
// one, each COMPRESSED record decodes to whole records within mmap_len, and
// feature 27 says how.
#include "perfdata/record_compressor.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <cstring>
#include <memory>

#include "perfdata/file_format.h"
#include "perfdata/reader.h"
#include "perfdata/writer.h"
#include "testing/perfdata_fixtures.h"
#include "testing/subprocess.h"

namespace bpfprof::perfdata {
namespace {

using bpfprof::testing::ByteVec;

constexpr uint32_t kMmapLen = (128 + 1) * 4096;

ByteVec sample(uint64_t i) {
  bpfprof::testing::SampleValues s;
  s.id = testing::kSampleId;
  s.ip = 0xffffffffc0001010 + (i % 7) * 16;
  s.pid = s.tid = 1234;
  s.time = 1000 + i;
  s.cpu = 1;
  s.period = 10000;
  return bpfprof::testing::sample_record(testing::kSampleType, s, perf::kMiscKernel);
}

struct DStreamFree {
  void operator()(ZSTD_DStream* d) const { ZSTD_freeDStream(d); }
};

class RecordCompressorTest : public ::testing::Test {
 protected:
  // Writes `n` samples in rounds of `per_round`, handed over in spans of 37
  // bytes (records cut anywhere), and closes the file.
  void write(size_t n, size_t per_round) {
    auto w = FileWriter::create(path_, testing::two_attrs());
    ASSERT_TRUE(w.ok()) << w.error().to_string();
    ASSERT_TRUE(w->enable_compression(1, kMmapLen).ok());
    ByteVec round;
    for (size_t i = 0; i < n; ++i) {
      ByteVec r = sample(i);
      round.insert(round.end(), r.begin(), r.end());
      if ((i + 1) % per_round == 0 || i + 1 == n) {
        for (size_t at = 0; at < round.size(); at += 37) {
          const size_t len = std::min<size_t>(37, round.size() - at);
          ASSERT_TRUE(w->append_compressed(Bytes(round.data() + at, len)).ok());
        }
        ASSERT_TRUE(w->finish_round().ok());
        round.clear();
      }
    }
    written_in_ = w->compressor()->bytes_in();
    Status s = w->close(Features{});
    ASSERT_TRUE(s.ok()) << s.error().to_string();
  }
  bpfprof::testing::TempDir dir_;
  std::string path_ = dir_.file("z.data");
  uint64_t written_in_ = 0;
};

TEST_F(RecordCompressorTest, RecordsComeBackOneForOne) {
  constexpr size_t kSamples = 20000;  // about 1.6 MB: many COMPRESSED records
  write(kSamples, 3000);
  auto r = FileReader::open(path_);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  size_t samples = 0;
  bool in_order = true;
  ASSERT_TRUE(r->for_each_record([&](const perf::RecordView& v, uint64_t) {
                 if (v.header.type != perf::kRecordSample) return;
                 const ByteVec want = sample(samples);
                 in_order = in_order && v.bytes.size() == want.size() &&
                            std::memcmp(v.bytes.data(), want.data(), want.size()) == 0;
                 ++samples;
               }).ok());
  EXPECT_EQ(samples, kSamples);
  EXPECT_TRUE(in_order);
  EXPECT_GT(r->stats().compressed_records, 10u);
  EXPECT_EQ(r->stats().decompressed_bytes, written_in_);
}

TEST_F(RecordCompressorTest, FeatureSaysZstdLevelRatioAndMmapLen) {
  write(5000, 5000);
  auto r = FileReader::open(path_);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_TRUE(r->features().compression.has_value());
  const Compression& c = *r->features().compression;
  EXPECT_EQ(c.version, 0u);
  EXPECT_EQ(c.type, kCompZstd);
  EXPECT_EQ(c.level, 1u);
  EXPECT_EQ(c.mmap_len, kMmapLen);
  EXPECT_GE(c.ratio, 2u);  // samples that differ in a few bytes pack well
}

// Each COMPRESSED record, decoded in turn by one stream (as perf does),
// yields whole records only and no more than mmap_len bytes; its size fits
// a u16; the data holds the HEADER_FEATURE record before the first one.
TEST_F(RecordCompressorTest, EveryCompressedRecordIsWholeAndBounded) {
  write(20000, 7000);
  std::vector<std::byte> file = bpfprof::testing::read_file_bytes(path_);
  FileHeader h;
  std::memcpy(&h, file.data(), sizeof h);
  std::unique_ptr<ZSTD_DStream, DStreamFree> d(ZSTD_createDStream());
  ZSTD_initDStream(d.get());
  std::vector<std::byte> out(kMmapLen + 1);
  size_t compressed = 0, pos = h.data.offset;
  bool feature_first = false;
  while (pos < h.data.offset + h.data.size) {
    const auto rh = load_unaligned<perf_event_header>(file.data() + pos);
    ASSERT_GE(rh.size, 8u);
    if (rh.type == perf::kRecordHeaderFeature && compressed == 0) {
      feature_first = load_unaligned<uint64_t>(file.data() + pos + 8) == kFeatCompressed;
    }
    if (rh.type == perf::kRecordCompressed) {
      ++compressed;
      ASSERT_LE(rh.size - 8u, kMaxCompressedPayload);
      ZSTD_inBuffer in{file.data() + pos + 8, rh.size - 8u, 0};
      ZSTD_outBuffer o{out.data(), out.size(), 0};
      while (in.pos < in.size) {
        const size_t ret = ZSTD_decompressStream(d.get(), &o, &in);
        ASSERT_FALSE(ZSTD_isError(ret)) << ZSTD_getErrorName(ret);
        ASSERT_LT(o.pos, out.size());
      }
      ASSERT_LE(o.pos, kMmapLen);
      size_t at = 0;
      while (at + 8 <= o.pos) at += load_unaligned<perf_event_header>(out.data() + at).size;
      EXPECT_EQ(at, o.pos) << "COMPRESSED record " << compressed << " ends inside a record";
    }
    pos += rh.size;
  }
  EXPECT_GT(compressed, 10u);
  EXPECT_TRUE(feature_first);
}

// A round must end on a whole record: a writer handed half of one refuses
// the round instead of writing a file perf cannot read.
TEST_F(RecordCompressorTest, ARoundEndingInsideARecordIsRefused) {
  auto w = FileWriter::create(path_, testing::two_attrs());
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->enable_compression(3, kMmapLen).ok());
  ByteVec r = sample(0);
  ASSERT_TRUE(w->append_compressed(Bytes(r.data(), r.size() / 2)).ok());
  EXPECT_FALSE(w->finish_round().ok());
}

TEST(RecordCompressorLevels, OutsideOneToMaxIsRefused) {
  EXPECT_FALSE(RecordCompressor::create(0, kMmapLen).ok());
  EXPECT_FALSE(RecordCompressor::create(ZSTD_maxCLevel() + 1, kMmapLen).ok());
  auto c = RecordCompressor::create(1, 4096 * 2);
  ASSERT_TRUE(c.ok());
  EXPECT_LE((*c)->batch_limit(), 8192u);  // never more than mmap_len
}

}  // namespace
}  // namespace bpfprof::perfdata
