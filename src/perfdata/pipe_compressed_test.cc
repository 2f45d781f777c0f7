// SPDX-License-Identifier: Apache-2.0
// Reader: pipe mode, zstd COMPRESSED records, unknown record types and
// features, and the kallsyms snapshot codec, on bytes built in the test.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "perfdata/kallsyms_table.h"
#include "perfdata/reader.h"
#include "testing/perfdata_streams.h"
#include "testing/subprocess.h"

namespace bpfprof::perfdata {
namespace {

using testing::ByteVec;

// Every record the reader hands out, copied, with its file offset.
struct Seen {
  std::vector<ByteVec> records;
  std::vector<uint64_t> offsets;
};

Seen collect(const FileReader& r) {
  Seen s;
  Status st = r.for_each_record([&](const perf::RecordView& v, uint64_t at) {
    s.records.emplace_back(v.bytes.begin(), v.bytes.end());
    s.offsets.push_back(at);
  });
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  return s;
}

std::vector<ByteVec> split_records(const ByteVec& bytes) {
  std::vector<ByteVec> out;
  for (size_t pos = 0; pos < bytes.size();) {
    auto r = perf::record_at(bytes, pos);
    EXPECT_TRUE(r.ok());
    out.emplace_back(r->bytes.begin(), r->bytes.end());
    pos += r->header.size;
  }
  return out;
}

TEST(PipeModeTest, AttrsFeaturesNamesAndRecords) {
  Features f;
  f.hostname = "pipe-host";
  f.kallsyms = "ffffffff81000000 T _text\n";
  const ByteVec records = testing::mixed_records();
  const ByteVec stream = testing::pipe_stream(records, f);
  auto r = FileReader::from_bytes(stream);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_TRUE(r->pipe_mode());
  ASSERT_EQ(r->attrs().size(), 2u);
  EXPECT_EQ(r->attrs()[0].name, "cpu-clock");
  EXPECT_EQ(r->attrs()[1].name, "dummy:u");
  EXPECT_EQ(r->attrs()[1].ids, (std::vector<uint64_t>{testing::kDummyId, testing::kDummyId + 1}));
  EXPECT_EQ(r->features().hostname, "pipe-host");
  auto table = KallsymsTable::open(r->features().kallsyms_packed, 0);
  ASSERT_TRUE(table.ok()) << table.error().to_string();
  ASSERT_EQ(table->size(), 1u);
  EXPECT_EQ(table->name(0), "_text");
  EXPECT_TRUE(r->has_feature(kFeatHostname));
  EXPECT_EQ(r->stats().unknown_features, 0u);

  // Only the real records come out, EVENT_UPDATE included (it is a record).
  Seen s = collect(*r);
  std::vector<ByteVec> want = split_records(records);
  ASSERT_GE(s.records.size(), want.size());
  std::vector<ByteVec> tail(s.records.end() - static_cast<ptrdiff_t>(want.size()), s.records.end());
  EXPECT_EQ(tail, want);
  for (const ByteVec& b : s.records) {
    auto v = *perf::record_at(b, 0);
    EXPECT_NE(v.header.type, perf::kRecordHeaderAttr);
    EXPECT_NE(v.header.type, perf::kRecordHeaderFeature);
    EXPECT_NE(r->attr_for(v), nullptr);
  }
}

TEST(PipeModeTest, OpenDetectsPipeHeaderInRegularFileAndStdin) {
  const ByteVec stream = testing::pipe_stream(testing::mixed_records());
  bpfprof::testing::TempDir dir;
  const std::string path = dir.file("pipe.data");
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(stream.data()), static_cast<std::streamsize>(stream.size()));
  auto r = FileReader::open(path);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_TRUE(r->pipe_mode());
  EXPECT_EQ(collect(*r).records.size(), collect(*FileReader::from_bytes(stream)).records.size());

  // "-" reads stdin whole.
  const int saved = dup(STDIN_FILENO);
  FILE* in = std::fopen(path.c_str(), "rb");
  ASSERT_NE(in, nullptr);
  dup2(fileno(in), STDIN_FILENO);
  auto s = FileReader::open("-");
  dup2(saved, STDIN_FILENO);
  close(saved);
  std::fclose(in);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_TRUE(s->pipe_mode());
  EXPECT_EQ(s->attrs().size(), 2u);
}

TEST(PipeModeTest, HeaderAttrIdLayouts) {
  perf_event_attr a = testing::make_attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
  struct Case {
    uint32_t attr_size;
    size_t ids_at;
  };
  // 6.1 (128 @ 136), an older perf (120 @ 128), 6.1 re-emitting an older attr
  // (120 @ 136, zero gap), a newer perf (136 @ 144), attr.size 0 (fixed 136).
  for (Case c : {Case{128, 136}, Case{120, 128}, Case{120, 136}, Case{136, 144}, Case{0, 136}}) {
    ByteVec s = testing::pipe_header();
    ByteVec h = testing::header_attr_record(a, {11, 12, 13}, c.attr_size, c.ids_at);
    s.insert(s.end(), h.begin(), h.end());
    auto r = FileReader::from_bytes(s);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_EQ(r->attrs().size(), 1u);
    EXPECT_EQ(r->attrs()[0].ids, (std::vector<uint64_t>{11, 12, 13}))
        << c.attr_size << " @ " << c.ids_at;
    EXPECT_EQ(r->attrs()[0].attr.sample_type, testing::kSampleType);
  }
}

TEST(PipeModeTest, HeaderAttrSizeOutOfRangeIsAnError) {
  perf_event_attr a = testing::make_attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
  for (uint32_t bad : {8u, 63u, 130u, 0xffffffffu}) {
    ByteVec s = testing::pipe_header();
    ByteVec h = testing::header_attr_record(a, {11}, bad, 136);
    s.insert(s.end(), h.begin(), h.end());
    auto r = FileReader::from_bytes(s);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, Errc::kBadRecord);
    EXPECT_EQ(r.error().offset, std::optional<uint64_t>(kPipeHeaderSize + 12)) << bad;
    EXPECT_NE(r.error().message.find("attr.size " + std::to_string(bad)), std::string::npos)
        << r.error().message;
  }
}

TEST(PipeModeTest, UnknownTypesAndFeaturesAreCountedNotFatal) {
  ByteVec records = testing::mixed_records(2);
  ByteVec odd = testing::RecordWriter(200, 0).u64(1).finish();
  ByteVec odd_kernel = testing::RecordWriter(40, 0).finish();
  records.insert(records.end(), odd.begin(), odd.end());
  records.insert(records.end(), odd_kernel.begin(), odd_kernel.end());
  records.insert(records.end(), odd.begin(), odd.end());
  ByteVec s = testing::pipe_stream(records);
  ByteVec feat = testing::header_feature_record(40, {std::byte{1}});
  s.insert(s.begin() + 16, feat.begin(), feat.end());
  auto r = FileReader::from_bytes(s);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->stats().unknown_features, 1u);
  collect(*r);
  EXPECT_EQ(r->stats().records_skipped, 3u);
  EXPECT_EQ(r->stats().unknown_record_types.at(200), 2u);
  EXPECT_EQ(r->stats().unknown_record_types.at(40), 1u);
  // A record with size < 8 stays an error with its offset.
  ByteVec bad = s;
  ByteVec tiny = testing::RecordWriter(9, 0).finish();
  tiny[6] = std::byte{4};
  bad.insert(bad.end(), tiny.begin(), tiny.end());
  auto b = FileReader::from_bytes(bad);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().offset, std::optional<uint64_t>(s.size()));
}

class CompressedTest : public ::testing::TestWithParam<size_t> {};

// Records decompressed from COMPRESSED records (cut at every size from tiny to
// larger than a record) come out exactly as written, in order.
TEST_P(CompressedTest, DecompressedRecordsMatchAcrossCuts) {
  ByteVec plain = testing::mixed_records(200);
  Features f;
  f.compression = Compression{1, kCompZstd, 1, 3, 1 << 20};
  ByteVec stream = testing::pipe_stream(testing::compressed_records(plain, GetParam()), f);
  ByteVec tail = testing::finished_round_record();
  stream.insert(stream.end(), tail.begin(), tail.end());
  auto r = FileReader::from_bytes(stream);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  Seen s = collect(*r);
  std::vector<ByteVec> want = split_records(plain);
  want.push_back(tail);
  std::vector<ByteVec> got(s.records.end() - static_cast<ptrdiff_t>(want.size()), s.records.end());
  EXPECT_EQ(got, want);
  EXPECT_GT(r->stats().compressed_records, 0u);
  EXPECT_EQ(r->stats().decompressed_bytes, plain.size());
}
INSTANTIATE_TEST_SUITE_P(Cuts, CompressedTest, ::testing::Values(1, 7, 64, 1000, 60000));

TEST(CompressedErrorsTest, CorruptOrOversizedIsAnErrorWithOffset) {
  ByteVec plain = testing::mixed_records(50);
  ByteVec comp = testing::compressed_records(plain, 100000);
  ByteVec prefix = testing::pipe_stream({});
  ByteVec stream = prefix;
  stream.insert(stream.end(), comp.begin(), comp.end());
  // Garbage inside the zstd payload.
  ByteVec corrupt = stream;
  for (size_t i = prefix.size() + 8; i < prefix.size() + 24; ++i) corrupt[i] = std::byte{0xff};
  auto r = FileReader::from_bytes(corrupt);
  ASSERT_TRUE(r.ok());
  Status st = r->for_each_record([](const perf::RecordView&, uint64_t) {});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().offset, std::optional<uint64_t>(prefix.size()));
  // More output than HEADER_COMPRESSED's mmap_len allows (the floor is 64 KiB).
  ByteVec big = testing::mixed_records(3000);
  Features f;
  f.compression = Compression{1, kCompZstd, 1, 3, 4096};
  ByteVec over = testing::pipe_stream(testing::compressed_records(big, 65000, big.size()), f);
  auto o = FileReader::from_bytes(over);
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o->for_each_record([](const perf::RecordView&, uint64_t) {}).ok());
  // A stream that ends inside a record.
  ByteVec cut_plain(plain.begin(), plain.end() - 4);
  ByteVec cut = testing::pipe_stream(testing::compressed_records(cut_plain));
  auto c = FileReader::from_bytes(cut);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->for_each_record([](const perf::RecordView&, uint64_t) {}).error().code,
            Errc::kTruncated);
}

// Version 3, what record writes: the same table as version 2, a fraction of
// its size; damaged bodies are refused with an offset, never read past.
TEST(KallsymsFeatureTest, CompactRoundTripAndDamage) {
  std::string text;
  for (int i = 0; i < 20000; ++i) {
    char addr[17];
    std::snprintf(addr, sizeof addr, "%016llx", 0xffffffff81000000ull + 48ull * static_cast<unsigned>(i));
    text += std::string(addr) + (i % 3 ? " t " : " T ") + "kernel_function_" + std::to_string(i) +
            (i > 19000 ? "\t[some_module]" : "") + "\n";
  }
  const std::vector<std::byte> v2 = encode_kallsyms(text);
  const std::vector<std::byte> v3 = encode_kallsyms_compact(text);
  EXPECT_LT(v3.size() * 4, v2.size()) << v3.size() << " vs " << v2.size();
  auto a = KallsymsTable::open(v2, 0);
  auto b = KallsymsTable::open(v3, 0);
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  ASSERT_TRUE(b.ok()) << b.error().to_string();
  ASSERT_EQ(a->size(), b->size());
  ASSERT_EQ(b->size(), 20000u);
  EXPECT_EQ(a->etext(), b->etext());
  ASSERT_EQ(a->module_count(), b->module_count());
  EXPECT_EQ(b->module_dso(1), "[some_module]");
  for (size_t i = 0; i < a->size(); i++) {
    ASSERT_EQ(a->addr(i), b->addr(i)) << i;
    ASSERT_EQ(a->name(i), b->name(i)) << i;
    ASSERT_EQ(a->module(i), b->module(i)) << i;
  }
  // Damage anywhere in the frame, a frame cut short, a lying raw_size: an
  // error, whatever the byte.
  for (size_t at = 16; at < v3.size(); at += std::max<size_t>(1, v3.size() / 97)) {
    std::vector<std::byte> bad = v3;
    bad[at] ^= std::byte{0x5a};
    auto t = KallsymsTable::open(bad, 1000);
    if (t.ok()) {
      // zstd has no checksum here: a flipped literal can decode to another
      // table, which must then be a consistent one.
      ASSERT_LE(t->size(), a->size());
    } else {
      ASSERT_TRUE(t.error().offset.has_value()) << t.error().to_string();
      EXPECT_GE(*t.error().offset, 1000u);
    }
  }
  // A frame that does not say its size (a streaming compressor's) is
  // streamed, with the same table.
  {
    std::vector<std::byte> table(load_unaligned<uint64_t>(v3.data() + 8));
    ASSERT_EQ(ZSTD_decompress(table.data(), table.size(), v3.data() + 16, v3.size() - 16),
              table.size());
    ZSTD_CCtx* cctx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
    std::vector<std::byte> frame(ZSTD_compressBound(table.size()));
    ZSTD_outBuffer out{frame.data(), frame.size(), 0};
    ZSTD_inBuffer in{table.data(), table.size(), 0};
    ASSERT_EQ(ZSTD_compressStream2(cctx, &out, &in, ZSTD_e_end), 0u);
    ZSTD_freeCCtx(cctx);
    ASSERT_EQ(ZSTD_getFrameContentSize(frame.data(), out.pos), ZSTD_CONTENTSIZE_UNKNOWN);
    std::vector<std::byte> streamed(v3.begin(), v3.begin() + 16);
    streamed.insert(streamed.end(), frame.begin(), frame.begin() + static_cast<ptrdiff_t>(out.pos));
    auto c = KallsymsTable::open(streamed, 0);
    ASSERT_TRUE(c.ok()) << c.error().to_string();
    ASSERT_EQ(c->size(), b->size());
    for (size_t i = 0; i < b->size(); i++) {
      ASSERT_EQ(c->addr(i), b->addr(i)) << i;
      ASSERT_EQ(c->name(i), b->name(i)) << i;
    }
    std::vector<std::byte> streamed_cut(streamed.begin(), streamed.end() - 10);
    EXPECT_FALSE(KallsymsTable::open(streamed_cut, 0).ok());
  }
  std::vector<std::byte> cut(v3.begin(), v3.end() - 10);
  EXPECT_FALSE(KallsymsTable::open(cut, 0).ok());
  std::vector<std::byte> lying = v3;
  const uint64_t raw = 40;
  std::memcpy(lying.data() + 8, &raw, sizeof raw);
  EXPECT_FALSE(KallsymsTable::open(lying, 0).ok());
  EXPECT_EQ(KallsymsTable::open(encode_kallsyms_compact(""), 0)->size(), 0u);
  // A version-3 header over no body at all (stored, raw_size 0): refused,
  // without touching the empty body (the fuzzer's find, under UBSan).
  std::vector<std::byte> empty(16, std::byte{0});
  empty[0] = std::byte{3};
  EXPECT_FALSE(KallsymsTable::open(empty, 0).ok());
}

// Version 1, what older recorders wrote: still read, and its hostile
// headers refused. (Version 2's are in symbols/kernel_symbols_test.cc.)
TEST(KallsymsFeatureTest, OldTextRoundTripAndHostileHeaders) {
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "ffffffff8100" + std::to_string(1000 + i) + " T sym_" + std::to_string(i) + "\n";
  std::vector<std::byte> enc = encode_kallsyms_v1(text);
  EXPECT_LT(enc.size(), text.size() / 3);
  auto dec = KallsymsTable::open(enc, 100);
  ASSERT_TRUE(dec.ok()) << dec.error().to_string();
  ASSERT_EQ(dec->size(), 2000u);
  EXPECT_EQ(dec->name(1999), "sym_1999");
  EXPECT_EQ(dec->addr(0), 0xffffffff81001000u);
  // The table is a view into its blob: the blob must outlive it.
  const std::vector<std::byte> v2 = encode_kallsyms(text);
  auto table = KallsymsTable::open(v2, 100);
  ASSERT_TRUE(table.ok()) << table.error().to_string();
  for (size_t i = 0; i < table->size(); i++) {
    ASSERT_EQ(table->addr(i), dec->addr(i));
    ASSERT_EQ(table->name(i), dec->name(i));
  }
  EXPECT_EQ(KallsymsTable::open(encode_kallsyms_v1(""), 0)->size(), 0u);

  auto patch64 = [](std::vector<std::byte> b, size_t at, uint64_t v) {
    std::memcpy(b.data() + at, &v, sizeof v);
    return b;
  };
  auto patch32 = [](std::vector<std::byte> b, size_t at, uint32_t v) {
    std::memcpy(b.data() + at, &v, sizeof v);
    return b;
  };
  auto code = [](const std::vector<std::byte>& b) { return KallsymsTable::open(b, 0).error().code; };
  EXPECT_EQ(code(patch64(enc, 8, 1ull << 40)), Errc::kBadRecord);
  EXPECT_EQ(code(patch64(enc, 8, text.size() - 1)), Errc::kBadRecord);
  EXPECT_EQ(code(patch64(enc, 8, text.size() + 1)), Errc::kBadRecord);
  EXPECT_EQ(code(patch32(enc, 0, 6)), Errc::kUnsupported);
  EXPECT_EQ(code(patch32(enc, 4, 9)), Errc::kUnsupported);
  std::vector<std::byte> cut(enc.begin(), enc.end() - 10);
  EXPECT_FALSE(KallsymsTable::open(cut, 0).ok());
  EXPECT_EQ(KallsymsTable::open(Bytes(enc).first(10), 0).error().code, Errc::kTruncated);
}

}  // namespace
}  // namespace bpfprof::perfdata
