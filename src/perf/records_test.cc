// SPDX-License-Identifier: Apache-2.0
#include "perf/records.h"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "testing/record_builder.h"

namespace bpfprof::perf {
namespace {

using testing::ByteVec;

// The sample_type bpfprof records with: trailer = TID, TIME, CPU, IDENTIFIER.
constexpr uint64_t kSampleType = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
                                 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
const testing::TrailerValues kTrailer{.pid = 10, .tid = 11, .time = 12345, .id = 77, .cpu = 3};

class RecordsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    perf_event_attr attr{};
    attr.sample_type = kSampleType;
    attr.sample_id_all = 1;
    auto l = SampleLayout::from_attr(attr);
    ASSERT_TRUE(l.ok());
    layout_ = *l;
  }
  RecordView view(const ByteVec& b, uint64_t base = 0) {
    auto r = record_at(b, 0, base);
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    return r.ok() ? *r : RecordView{};
  }
  void expect_trailer(const SampleId& s) {
    EXPECT_EQ(s.pid, 10u);
    EXPECT_EQ(s.tid, 11u);
    EXPECT_EQ(s.time, 12345u);
    EXPECT_EQ(s.id, 77u);
    EXPECT_EQ(s.cpu, 3u);
  }
  // Sets header.size (the kernel's view of the record) without changing the bytes.
  static void set_size(ByteVec& b, uint16_t size) { std::memcpy(b.data() + 6, &size, 2); }

  SampleLayout layout_;
};

TEST_F(RecordsTest, RecordAtChecksHeader) {
  ByteVec rec = testing::finished_round_record();
  auto r = record_at(rec, 0, 100);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->header.type, kRecordFinishedRound);
  EXPECT_EQ(r->header.size, 8u);
  EXPECT_EQ(r->offset, 100u);

  ByteVec small = rec;
  set_size(small, 4);
  auto bad = record_at(small, 0, 100);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::kBadRecord);
  EXPECT_EQ(*bad.error().offset, 100u);

  ByteVec big = rec;
  set_size(big, 16);
  EXPECT_EQ(record_at(big, 0).error().code, Errc::kTruncated);
  EXPECT_EQ(record_at(rec, 3).error().code, Errc::kTruncated);   // partial header
  EXPECT_EQ(record_at(rec, 9).error().code, Errc::kTruncated);   // past the end
}

TEST_F(RecordsTest, Mmap2) {
  ByteVec b = testing::mmap2_record(
      kSampleType,
      {.pid = 1, .tid = 2, .start = 0x400000, .len = 0x1000, .pgoff = 0x200, .maj = 8,
       .min = 1, .ino = 99, .ino_generation = 5, .prot = 5, .flags = 2, .filename = "/bin/true"},
      kTrailer);
  auto m = Mmap2::parse(view(b), layout_);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->pid, 1u);
  EXPECT_EQ(m->start, 0x400000u);
  EXPECT_EQ(m->len, 0x1000u);
  EXPECT_EQ(m->pgoff, 0x200u);
  EXPECT_EQ(m->maj, 8u);
  EXPECT_EQ(m->ino, 99u);
  EXPECT_EQ(m->ino_generation, 5u);
  EXPECT_EQ(m->prot, 5u);
  EXPECT_EQ(m->flags, 2u);
  EXPECT_EQ(m->filename, "/bin/true");
  EXPECT_TRUE(m->build_id.empty());
  expect_trailer(m->sample_id);
}

TEST_F(RecordsTest, Mmap2WithBuildId) {
  testing::RecordWriter w(kRecordMmap2, kMiscUser | kMiscMmapBuildId);
  w.u32(1).u32(1).u64(0x1000).u64(0x2000).u64(0);
  w.u8(4).u8(0).u16(0);
  for (int i = 0; i < 20; ++i) w.u8(static_cast<uint8_t>(0xa0 + i));
  w.u32(5).u32(2).padded_string("/lib/x.so").bytes(testing::sample_id_trailer(kSampleType, kTrailer));
  ByteVec b = w.finish();
  auto m = Mmap2::parse(view(b), layout_);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  ASSERT_EQ(m->build_id.size(), 4u);
  EXPECT_EQ(m->build_id[3], std::byte{0xa3});
  EXPECT_EQ(m->filename, "/lib/x.so");

  b[40] = std::byte{21};  // build_id_size larger than the 20-byte field
  auto bad = Mmap2::parse(view(b), layout_);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::kBadRecord);
  EXPECT_EQ(*bad.error().offset, 40u);
}

TEST_F(RecordsTest, Mmap) {
  ByteVec b = testing::mmap_record(kSampleType, 4, 5, 0x1000, 0x3000, 0, "[vdso]", kTrailer);
  auto m = Mmap::parse(view(b), layout_);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->tid, 5u);
  EXPECT_EQ(m->len, 0x3000u);
  EXPECT_EQ(m->filename, "[vdso]");
  expect_trailer(m->sample_id);
}

TEST_F(RecordsTest, Comm) {
  ByteVec b = testing::comm_record(kSampleType, 42, 43, "bpfprof-test", kTrailer);
  EXPECT_EQ(b.size(), 8u + 8 + 16 + 32);
  auto c = Comm::parse(view(b), layout_);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->pid, 42u);
  EXPECT_EQ(c->tid, 43u);
  EXPECT_EQ(c->comm, "bpfprof-test");
  expect_trailer(c->sample_id);
}

TEST_F(RecordsTest, Cgroup) {
  ByteVec b = testing::cgroup_record(kSampleType, 0x2a51, "/system.slice/a b.scope", kTrailer);
  auto c = Cgroup::parse(view(b), layout_);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->id, 0x2a51u);
  EXPECT_EQ(c->path, "/system.slice/a b.scope");
  expect_trailer(c->sample_id);
  // A path without its NUL before the trailer is refused, naming the field.
  ByteVec cut = testing::RecordWriter(kRecordCgroup, 0).u64(1).u64(0x4141414141414141).finish();
  auto bad = Cgroup::parse(view(cut), layout_);
  ASSERT_FALSE(bad.ok());
}

TEST_F(RecordsTest, ForkAndExit) {
  for (bool exit : {false, true}) {
    ByteVec b = testing::fork_exit_record(kSampleType, exit, 5, 1, 6, 1, 999, kTrailer);
    auto f = ForkExit::parse(view(b), layout_);
    ASSERT_TRUE(f.ok()) << f.error().to_string();
    EXPECT_EQ(f->pid, 5u);
    EXPECT_EQ(f->ppid, 1u);
    EXPECT_EQ(f->tid, 6u);
    EXPECT_EQ(f->ptid, 1u);
    EXPECT_EQ(f->time, 999u);
    expect_trailer(f->sample_id);
  }
}

TEST_F(RecordsTest, LostLostSamplesThrottle) {
  ByteVec l = testing::lost_record(kSampleType, 7, 1000, kTrailer);
  auto lost = Lost::parse(view(l), layout_);
  ASSERT_TRUE(lost.ok());
  EXPECT_EQ(lost->id, 7u);
  EXPECT_EQ(lost->lost, 1000u);
  expect_trailer(lost->sample_id);

  ByteVec ls = testing::lost_samples_record(kSampleType, 12, kTrailer);
  auto lost_samples = LostSamples::parse(view(ls), layout_);
  ASSERT_TRUE(lost_samples.ok());
  EXPECT_EQ(lost_samples->lost, 12u);

  for (bool un : {false, true}) {
    ByteVec t = testing::throttle_record(kSampleType, un, 55, 7, 8, kTrailer);
    auto th = Throttle::parse(view(t), layout_);
    ASSERT_TRUE(th.ok());
    EXPECT_EQ(th->time, 55u);
    EXPECT_EQ(th->id, 7u);
    EXPECT_EQ(th->stream_id, 8u);
  }
}

TEST_F(RecordsTest, KsymbolAndBpfEvent) {
  ByteVec k = testing::ksymbol_record(kSampleType, 0xffffffffc0001000, 312, kKsymTypeBpf,
                                      kKsymFlagUnregister, "bpf_prog_6deef7357e7b4530_foo",
                                      kTrailer);
  auto ks = Ksymbol::parse(view(k), layout_);
  ASSERT_TRUE(ks.ok()) << ks.error().to_string();
  EXPECT_EQ(ks->addr, 0xffffffffc0001000u);
  EXPECT_EQ(ks->len, 312u);
  EXPECT_EQ(ks->ksym_type, kKsymTypeBpf);
  EXPECT_TRUE(ks->unregister());
  EXPECT_EQ(ks->name, "bpf_prog_6deef7357e7b4530_foo");
  expect_trailer(ks->sample_id);

  const uint8_t tag[kBpfTagSize] = {0x6d, 0xee, 0xf7, 0x35, 0x7e, 0x7b, 0x45, 0x30};
  ByteVec e = testing::bpf_event_record(kSampleType, kBpfEventProgLoad, 0, 31, tag, kTrailer);
  EXPECT_EQ(e.size(), 24u + 32);
  auto ev = BpfEvent::parse(view(e), layout_);
  ASSERT_TRUE(ev.ok()) << ev.error().to_string();
  EXPECT_EQ(ev->type, kBpfEventProgLoad);
  EXPECT_EQ(ev->id, 31u);
  EXPECT_EQ(ev->tag[0], 0x6d);
  EXPECT_EQ(ev->tag[7], 0x30);
  expect_trailer(ev->sample_id);
}

// Kernels grow the header.size of KSYMBOL and BPF_EVENT by other listeners'
// id_hdr_size and never restore it: the real trailer follows the fields, then
// stale bytes. The parsers and SampleLayout must read the real trailer.
TEST_F(RecordsTest, InflatedKsymbolAndBpfEventReadTheRealTrailer) {
  const uint8_t tag[kBpfTagSize] = {1, 2, 3, 4, 5, 6, 7, 8};
  const testing::TrailerValues stale{.pid = 99, .tid = 99, .time = 999, .id = 999, .cpu = 9};
  const ByteVec records[] = {
      testing::ksymbol_record(kSampleType, 0xffffffffc0001000, 64, kKsymTypeBpf, 0,
                              "bpf_prog_0011223344556677_f", kTrailer),
      testing::bpf_event_record(kSampleType, kBpfEventProgLoad, 0, 31, tag, kTrailer),
  };
  for (const ByteVec& good : records) {
    for (size_t copies = 1; copies <= 2; ++copies) {
      ByteVec b = good;
      for (size_t i = 0; i < copies; ++i) {
        ByteVec t = testing::sample_id_trailer(kSampleType, stale);
        b.insert(b.end(), t.begin(), t.end());
      }
      set_size(b, static_cast<uint16_t>(b.size()));
      RecordView v = view(b);
      EXPECT_EQ(layout_.time_of(v), std::optional<uint64_t>(12345));
      EXPECT_EQ(layout_.id_of(v), std::optional<uint64_t>(77));
      const size_t extra = 32 * copies;
      if (v.header.type == kRecordKsymbol) {
        auto k = Ksymbol::parse(v, layout_);
        ASSERT_TRUE(k.ok()) << k.error().to_string();
        EXPECT_EQ(k->name, "bpf_prog_0011223344556677_f");
        EXPECT_EQ(k->stale_bytes, extra);
        expect_trailer(k->sample_id);
      } else {
        auto e = BpfEvent::parse(v, layout_);
        ASSERT_TRUE(e.ok()) << e.error().to_string();
        EXPECT_EQ(e->id, 31u);
        EXPECT_EQ(e->stale_bytes, extra);
        expect_trailer(e->sample_id);
      }
      auto sid = parse_sample_id(v, layout_);
      ASSERT_TRUE(sid.ok());
      expect_trailer(*sid);
    }
  }
}

TEST_F(RecordsTest, WithoutSampleIdAllThereIsNoTrailer) {
  perf_event_attr attr{};
  attr.sample_type = kSampleType;
  SampleLayout plain = *SampleLayout::from_attr(attr);
  EXPECT_EQ(plain.id_hdr_size(), 0u);
  ByteVec b = testing::lost_record(0, 7, 3);
  auto lost = Lost::parse(view(b), plain);
  ASSERT_TRUE(lost.ok());
  EXPECT_EQ(lost->lost, 3u);
  // The same bytes under a trailer-bearing layout are too short.
  EXPECT_FALSE(Lost::parse(view(b), layout_).ok());
}

TEST_F(RecordsTest, FieldsMustEndAtTheTrailer) {
  // 8 extra bytes between LOST's fields and its trailer: the trailer is where
  // we expect it, the body is not.
  testing::RecordWriter w(kRecordLost, 0);
  w.u64(7).u64(1).u64(0xdead).bytes(testing::sample_id_trailer(kSampleType, kTrailer));
  ByteVec b = w.finish();
  auto r = Lost::parse(view(b, 4096), layout_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kBadRecord);
  EXPECT_EQ(*r.error().offset, 4096u + 24);

  // A string record whose name runs into the trailer has no NUL before it.
  ByteVec k = testing::ksymbol_record(kSampleType, 1, 2, 1, 0, "abcdefg", kTrailer);
  k[24 + 7] = std::byte{'h'};
  auto ks = Ksymbol::parse(view(k), layout_);
  ASSERT_FALSE(ks.ok());
  EXPECT_EQ(ks.error().code, Errc::kBadRecord);
  EXPECT_NE(ks.error().message.find("KSYMBOL.name"), std::string::npos);
}

TEST_F(RecordsTest, WrongTypeAndInconsistentViewAreErrors) {
  ByteVec b = testing::lost_record(kSampleType, 7, 1, kTrailer);
  EXPECT_EQ(Comm::parse(view(b), layout_).error().code, Errc::kBadRecord);
  RecordView v = view(b);
  v.bytes = v.bytes.first(16);  // header claims more than the view holds
  EXPECT_EQ(Lost::parse(v, layout_).error().code, Errc::kBadRecord);
}

// Every prefix of every record, with header.size shrunk to match, never reads
// past the view (ASan builds check this), and whole-u64 prefixes are errors.
TEST_F(RecordsTest, TruncatedRecordsAreErrors) {
  const uint8_t tag[kBpfTagSize] = {};
  const std::vector<ByteVec> records = {
      testing::mmap2_record(kSampleType, {.filename = "/x"}, kTrailer),
      testing::mmap_record(kSampleType, 1, 1, 0, 0, 0, "/x", kTrailer),
      testing::comm_record(kSampleType, 1, 1, "c", kTrailer),
      testing::fork_exit_record(kSampleType, false, 1, 1, 1, 1, 1, kTrailer),
      testing::lost_record(kSampleType, 1, 1, kTrailer),
      testing::lost_samples_record(kSampleType, 1, kTrailer),
      testing::throttle_record(kSampleType, false, 1, 1, 1, kTrailer),
      testing::ksymbol_record(kSampleType, 1, 1, 1, 0, "k", kTrailer),
      testing::bpf_event_record(kSampleType, 1, 0, 1, tag, kTrailer),
  };
  for (const ByteVec& full : records) {
    // Every byte length must be safe; lengths in whole u64s (what the kernel
    // and perf write) must also be rejected.
    for (size_t n = 8; n < full.size(); ++n) {
      // Copy so ASan sees the real end of the shortened record.
      ByteVec b(full.begin(), full.begin() + static_cast<ptrdiff_t>(n));
      set_size(b, static_cast<uint16_t>(n));
      RecordView v = view(b);
      bool ok = true;
      switch (v.header.type) {
        case kRecordMmap2: ok = Mmap2::parse(v, layout_).ok(); break;
        case kRecordMmap: ok = Mmap::parse(v, layout_).ok(); break;
        case kRecordComm: ok = Comm::parse(v, layout_).ok(); break;
        case kRecordFork: ok = ForkExit::parse(v, layout_).ok(); break;
        case kRecordLost: ok = Lost::parse(v, layout_).ok(); break;
        case kRecordLostSamples: ok = LostSamples::parse(v, layout_).ok(); break;
        case kRecordThrottle: ok = Throttle::parse(v, layout_).ok(); break;
        case kRecordKsymbol: ok = Ksymbol::parse(v, layout_).ok(); break;
        case kRecordBpfEvent: ok = BpfEvent::parse(v, layout_).ok(); break;
        default: FAIL() << "unexpected type " << v.header.type;
      }
      if (n % 8 != 0) continue;
      EXPECT_FALSE(ok) << "type " << v.header.type << " accepted " << n << " of "
                       << full.size() << " bytes";
    }
  }
}

TEST_F(RecordsTest, BpfMetadata) {
  const ByteVec b = testing::bpf_metadata_record(
      "bpf_prog_0011223344556677_handler", {{"version", "\"1.2\""}, {"build", "7"}});
  EXPECT_EQ(b.size(), 8u + 512 + 8 + 2 * 320);
  auto m = BpfMetadata::parse(view(b));
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->prog_name, "bpf_prog_0011223344556677_handler");
  ASSERT_EQ(m->entries.size(), 2u);
  EXPECT_EQ(m->entries[0].first, "version");
  EXPECT_EQ(m->entries[0].second, "\"1.2\"");
  EXPECT_EQ(m->entries[1].first, "build");
  EXPECT_EQ(m->entries[1].second, "7");
  // None is a record too.
  auto empty = BpfMetadata::parse(view(testing::bpf_metadata_record("bpf_prog_x", {})));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->entries.empty());
}

TEST_F(RecordsTest, BpfMetadataDamaged) {
  const ByteVec good = testing::bpf_metadata_record("bpf_prog_x", {{"k", "v"}});
  // A count the entries do not fill, either way.
  for (const uint64_t n : {0ull, 2ull, ~0ull}) {
    ByteVec b = good;
    std::memcpy(b.data() + 8 + 512, &n, 8);
    auto m = BpfMetadata::parse(view(b, 4096));
    ASSERT_FALSE(m.ok()) << n;
    EXPECT_NE(m.error().to_string().find("nr_entries"), std::string::npos) << m.error().to_string();
  }
  // Text without its NUL: the name, a key, a value.
  for (const size_t at : {size_t{8}, size_t{8 + 512 + 8}, size_t{8 + 512 + 8 + 64}}) {
    ByteVec b = good;
    const size_t n = at == 8 ? 512 : at == 8 + 512 + 8 ? 64 : 256;
    std::memset(b.data() + at, 'a', n);
    auto m = BpfMetadata::parse(view(b));
    ASSERT_FALSE(m.ok()) << at;
    EXPECT_NE(m.error().to_string().find("no NUL"), std::string::npos) << m.error().to_string();
  }
  // Cut short anywhere: an error, never a read past the end.
  for (size_t n = 8; n < good.size(); n += 8) {
    ByteVec b(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    set_size(b, static_cast<uint16_t>(n));
    EXPECT_FALSE(BpfMetadata::parse(view(b)).ok()) << n;
  }
}

TEST_F(RecordsTest, SampleIdOfUserRecordIsEmpty) {
  ByteVec b = testing::finished_round_record();
  auto s = parse_sample_id(view(b), layout_);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->time, 0u);
}

}  // namespace
}  // namespace bpfprof::perf
