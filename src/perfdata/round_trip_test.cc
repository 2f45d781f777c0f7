// SPDX-License-Identifier: Apache-2.0
// Writer -> reader round trips, and the reader's handling of files it must refuse.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "perfdata/file_format.h"
#include "perfdata/kallsyms_table.h"
#include "perfdata/reader.h"
#include "testing/perfdata_fixtures.h"
#include "perfdata/writer.h"
#include "testing/subprocess.h"

namespace bpfprof::perfdata {
namespace {

using bpfprof::testing::ByteVec;
using testing::kSampleType;


ByteVec sample(uint64_t id, uint64_t time) {
  bpfprof::testing::SampleValues s;
  s.id = id;
  s.ip = 0xffffffffc0001010;
  s.pid = s.tid = 1234;
  s.time = time;
  s.cpu = 1;
  s.period = 10000;
  return bpfprof::testing::sample_record(kSampleType, s, perf::kMiscKernel);
}

Features all_features() {
  Features f;
  f.hostname = "testhost";
  f.osrelease = "6.1.0-test";
  f.version = "bpfprof 0.1.0";
  f.arch = "x86_64";
  f.nr_cpus_avail = 4;
  f.nr_cpus_online = 2;
  f.cmdline = {"/usr/bin/bpfprof", "record", "-o", "x.data"};
  f.clockid_res_ns = 1;
  f.first_sample_time = 1000;
  f.last_sample_time = 2000;
  f.bpf_prog_info = {testing::demo_prog(42, 0xffffffffc0001000)};
  // A BTF header (magic, version 1, hdr_len 24) with empty type and string sections.
  std::vector<std::byte> btf(24);
  btf[0] = std::byte{0x9f};
  btf[1] = std::byte{0xeb};
  btf[2] = std::byte{1};
  btf[4] = std::byte{24};
  f.bpf_btf = {{7, btf}};
  f.other[kFeatCpuDesc] = {std::byte{'c'}, std::byte{'p'}, std::byte{'u'}};
  return f;
}

class RoundTripTest : public ::testing::Test {
 protected:
  bpfprof::testing::TempDir dir_;
};

// A machine with many CPUs has many ids per event: with a few the reader
// scans them, past that it looks them up; both give each record its attr,
// and the first attr that listed an id keeps it.
TEST_F(RoundTripTest, AttrForWithFewAndManyIds) {
  for (const uint64_t per_attr : {uint64_t{3}, uint64_t{40}}) {
    SCOPED_TRACE(::testing::Message() << per_attr << " ids per attr");
    std::vector<AttrEntry> attrs = testing::two_attrs();
    attrs[0].ids.clear();
    attrs[1].ids.clear();
    for (uint64_t i = 0; i < per_attr; i++) {
      attrs[0].ids.push_back(1000 + i);
      attrs[1].ids.push_back(5000 + i);
    }
    attrs[1].ids.push_back(1000);  // listed twice: stays with the first attr
    const std::string path = dir_.file("ids" + std::to_string(per_attr) + ".data");
    auto w = FileWriter::create(path, attrs);
    ASSERT_TRUE(w.ok()) << w.error().to_string();
    std::vector<uint64_t> ids;
    for (uint64_t i = 0; i < per_attr; i++) ids.push_back(1000 + i);
    ids.push_back(777);  // in no attr
    for (size_t i = 0; i < ids.size(); i++) ASSERT_TRUE(w->append(sample(ids[i], 1000 + i)).ok());
    for (uint64_t i = 0; i < per_attr; i++) {
      bpfprof::testing::TrailerValues t{1, 1, 2000 + i, 5000 + i, 0, 0};
      ASSERT_TRUE(w->append(bpfprof::testing::comm_record(kSampleType, 1, 1, "x", t)).ok());
    }
    ASSERT_TRUE(w->close(Features{}).ok());
    auto r = FileReader::open(path);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    size_t samples = 0, comms = 0, unknown = 0;
    Status walked = r->for_each_record([&](const perf::RecordView& v, uint64_t) {
      const FileAttr* a = r->attr_for(v);
      if (a == nullptr) {
        unknown++;
      } else if (v.header.type == perf::kRecordSample) {
        EXPECT_EQ(a, &r->attrs()[0]);
        samples++;
      } else if (v.header.type == perf::kRecordComm) {
        EXPECT_EQ(a, &r->attrs()[1]);
        comms++;
      }
    });
    ASSERT_TRUE(walked.ok()) << walked.error().to_string();
    EXPECT_EQ(samples, per_attr);
    EXPECT_EQ(comms, per_attr);
    EXPECT_EQ(unknown, 1u);
  }
}

TEST_F(RoundTripTest, AttrsIdsNamesRecordsFeatures) {
  const std::string path = dir_.file("perf.data");
  auto w = FileWriter::create(path, testing::two_attrs());
  ASSERT_TRUE(w.ok()) << w.error().to_string();
  bpfprof::testing::TrailerValues t{1234, 1234, 0, testing::kDummyId, 0, 1};
  std::vector<ByteVec> records = {
      bpfprof::testing::comm_record(kSampleType, 1234, 1234, "demo", t),
      bpfprof::testing::ksymbol_record(kSampleType, 0xffffffffc0001000, 0x100,
                                       perf::kKsymTypeBpf, 0, "bpf_prog_0123456789abcdef_demo", t),
      sample(testing::kSampleId, 1000),
      sample(testing::kSampleId + 1, 2000),
  };
  ASSERT_TRUE(w->append(records[0]).ok());
  ASSERT_TRUE(w->append(records[1]).ok());
  ASSERT_TRUE(w->finish_round().ok());
  ASSERT_TRUE(w->append(bpfprof::testing::concat({records[2], records[3]})).ok());
  ASSERT_TRUE(w->finish_round().ok());
  const uint64_t data_bytes = w->data_bytes();
  Status closed = w->close(all_features());
  ASSERT_TRUE(closed.ok()) << closed.error().to_string();

  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  auto r = FileReader::open(path);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE(r->truncated_header());
  EXPECT_TRUE(r->feature_errors().empty());
  EXPECT_EQ(r->data_size(), data_bytes);
  // 104 header + 4 ids * 8 + 2 attrs * 144.
  EXPECT_EQ(r->data_offset(), 104u + 32 + 288);
  ASSERT_EQ(r->attrs().size(), 2u);
  EXPECT_EQ(r->attrs()[0].name, "cpu-clock");
  EXPECT_EQ(r->attrs()[1].name, "dummy:u");
  EXPECT_EQ(r->attrs()[0].ids, (std::vector<uint64_t>{101, 102}));
  EXPECT_EQ(r->attrs()[1].ids, (std::vector<uint64_t>{201, 202}));
  EXPECT_EQ(r->attrs()[1].attr.config, uint64_t{PERF_COUNT_SW_DUMMY});
  EXPECT_EQ(r->attrs()[1].attr.ksymbol, 1u);
  EXPECT_EQ(r->attrs()[0].attr.size, perf::kAttrSizeWritten);

  std::vector<ByteVec> seen;
  std::vector<const FileAttr*> owners;
  Status s = r->for_each_record([&](const perf::RecordView& v, uint64_t off) {
    EXPECT_GE(off, r->data_offset());
    if (v.header.type == perf::kRecordFinishedRound) return;
    seen.emplace_back(v.bytes.begin(), v.bytes.end());
    owners.push_back(r->attr_for(v));
  });
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  ASSERT_EQ(seen, records);
  EXPECT_EQ(owners[0], &r->attrs()[1]);  // side-band by trailer id
  EXPECT_EQ(owners[2], &r->attrs()[0]);  // samples by IDENTIFIER
  EXPECT_EQ(owners[3], &r->attrs()[0]);

  const Features& f = r->features();
  const Features want = all_features();
  for (int feat : {kFeatHostname, kFeatOsRelease, kFeatVersion, kFeatArch, kFeatNrCpus,
                   kFeatCmdline, kFeatEventDesc, kFeatSampleTime, kFeatClockId, kFeatBpfProgInfo,
                   kFeatBpfBtf, kFeatCpuDesc})
    EXPECT_TRUE(r->has_feature(feat)) << feat;
  EXPECT_FALSE(r->has_feature(kFeatBuildId));
  EXPECT_EQ(f.hostname, want.hostname);
  EXPECT_EQ(f.osrelease, want.osrelease);
  EXPECT_EQ(f.version, want.version);
  EXPECT_EQ(f.arch, want.arch);
  EXPECT_EQ(f.nr_cpus_avail, 4u);
  EXPECT_EQ(f.nr_cpus_online, 2u);
  EXPECT_EQ(f.cmdline, want.cmdline);
  EXPECT_EQ(f.clockid_res_ns, 1u);
  EXPECT_EQ(f.first_sample_time, 1000u);
  EXPECT_EQ(f.last_sample_time, 2000u);
  ASSERT_EQ(f.bpf_prog_info.size(), 1u);
  EXPECT_EQ(f.bpf_prog_info[0].id(), 42u);
  EXPECT_EQ(f.bpf_prog_info[0].jited_ksyms, want.bpf_prog_info[0].jited_ksyms);
  EXPECT_EQ(f.bpf_prog_info[0].line_info, want.bpf_prog_info[0].line_info);
  EXPECT_EQ(f.bpf_prog_info[0].jited_insns, want.bpf_prog_info[0].jited_insns);
  ASSERT_EQ(f.bpf_btf.size(), 1u);
  EXPECT_EQ(f.bpf_btf[0].id, 7u);
  EXPECT_EQ(f.bpf_btf[0].data, want.bpf_btf[0].data);
  EXPECT_EQ(f.other.at(kFeatCpuDesc), want.other.at(kFeatCpuDesc));
}

// A kallsyms snapshot, small or large, is left where it lies in the file and
// opens as the table of the text written.
TEST_F(RoundTripTest, KallsymsSnapshotsSmallAndLargeReadBackAsTables) {
  const std::string large = [] {
    // Names that do not repeat.
    std::string text;
    uint64_t x = 88172645463325252ull;
    for (int i = 0; text.size() < (1 << 20); i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      text += "ffffffff8" + std::to_string(1000000 + i) + " T f_" + std::to_string(x) + "\n";
    }
    return text;
  }();
  const std::string small = "ffffffff81000000 T _text\n";
  for (const std::string* text : {&small, &large}) {
    SCOPED_TRACE(text->size());
    const std::string path = dir_.file("kallsyms.data");
    auto w = FileWriter::create(path, testing::two_attrs());
    ASSERT_TRUE(w.ok()) << w.error().to_string();
    Features f;
    f.kallsyms = *text;
    ASSERT_TRUE(w->close(f).ok());
    auto r = FileReader::open(path);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_TRUE(r->feature_errors().empty());
    const Features& got = r->features();
    EXPECT_FALSE(got.kallsyms.has_value());
    ASSERT_FALSE(got.kallsyms_packed.empty());
    EXPECT_GT(got.kallsyms_packed_at, r->data_offset());
    auto read = KallsymsTable::open(got.kallsyms_packed, got.kallsyms_packed_at);
    ASSERT_TRUE(read.ok()) << read.error().to_string();
    const KallsymsTable written = KallsymsTable::from_text(*text);
    ASSERT_EQ(read->size(), written.size());
    ASSERT_GT(read->size(), 0u);
    for (size_t i = 0; i < read->size(); i++) {
      ASSERT_EQ(read->addr(i), written.addr(i));
      ASSERT_EQ(read->name(i), written.name(i));
    }
  }
}

TEST_F(RoundTripTest, AttrIdsEditableBeforeFirstAppend) {
  const std::string path = dir_.file("ids.data");
  auto w = FileWriter::create(path, testing::two_attrs());
  ASSERT_TRUE(w.ok());
  w->attr_ids_mutable(0).push_back(103);
  w->attr_ids_mutable(1) = {301};
  ASSERT_TRUE(w->append(sample(103, 5)).ok());
  ASSERT_TRUE(w->finish_round().ok());
  ASSERT_TRUE(w->close({}).ok());
  auto r = FileReader::open(path);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->attrs()[0].ids, (std::vector<uint64_t>{101, 102, 103}));
  EXPECT_EQ(r->attrs()[1].ids, (std::vector<uint64_t>{301}));
  EXPECT_EQ(r->data_offset(), 104u + 32 + 288);
  int n = 0;
  ASSERT_TRUE(r->for_each_record([&](const perf::RecordView& v, uint64_t) {
                 if (v.header.type == perf::kRecordSample) {
                   ++n;
                   EXPECT_EQ(r->attr_for(v), &r->attrs()[0]);
                 }
               }).ok());
  EXPECT_EQ(n, 1);
}

// Large appends (a recorder's ring contents) bypass the buffer: they must
// still land after what was buffered before them, and before what follows.
TEST_F(RoundTripTest, LargeAppendsKeepOrder) {
  const std::string path = dir_.file("order.data");
  auto w = FileWriter::create(path, testing::two_attrs());
  ASSERT_TRUE(w.ok());
  uint64_t t = 0;
  auto samples = [&](size_t n) {
    ByteVec out;
    for (size_t i = 0; i < n; i++) {
      const ByteVec one = sample(101, ++t);
      out.insert(out.end(), one.begin(), one.end());
    }
    return out;
  };
  ASSERT_TRUE(w->append(samples(1)).ok());
  const ByteVec large = samples(3000);
  ASSERT_GT(large.size(), 128u << 10);
  ASSERT_TRUE(w->append(large).ok());
  ASSERT_TRUE(w->append(samples(2)).ok());
  ASSERT_TRUE(w->finish_round().ok());
  ASSERT_TRUE(w->append(large).ok());  // nothing buffered before it
  ASSERT_TRUE(w->close({}).ok());
  auto r = FileReader::open(path);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  auto layout = perf::SampleLayout::from_attr(r->attrs()[0].attr);
  ASSERT_TRUE(layout.ok());
  std::vector<uint64_t> times;
  ASSERT_TRUE(r->for_each_record([&](const perf::RecordView& v, uint64_t) {
                 if (v.header.type != perf::kRecordSample) return;
                 if (auto time = layout->time_of(v)) times.push_back(*time);
               }).ok());
  ASSERT_EQ(times.size(), 3003u + 3000u);
  for (uint64_t i = 0; i < 3003; i++) ASSERT_EQ(times[i], i + 1) << "record " << i;
  for (uint64_t i = 0; i < 3000; i++) ASSERT_EQ(times[3003 + i], i + 2) << "record " << 3003 + i;
}

TEST_F(RoundTripTest, KilledRecorderLeavesReadableFile) {
  const std::string path = dir_.file("killed.data");
  {
    auto w = FileWriter::create(path, testing::two_attrs());
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->append(sample(101, 1)).ok());
    ASSERT_TRUE(w->append(sample(101, 2)).ok());
    ASSERT_TRUE(w->finish_round().ok());
    // Destroyed without close(): the header says the data size of the last
    // round, and no features.
  }
  // Half a record at the end, as a SIGKILL mid-write would leave.
  {
    ByteVec half = sample(101, 3);
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out.write(reinterpret_cast<const char*>(half.data()), 20);
  }
  auto count_samples = [](const FileReader& r) {
    int samples = 0;
    EXPECT_TRUE(r.for_each_record([&](const perf::RecordView& v, uint64_t) {
                   samples += v.header.type == perf::kRecordSample;
                 }).ok());
    return samples;
  };
  auto r = FileReader::open(path);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE(r->truncated_header());
  EXPECT_EQ(r->data_size(), 2 * sample(101, 1).size() + sizeof(perf_event_header));
  EXPECT_EQ(count_samples(*r), 2);

  // A writer that never updated the header (data.size 0): the data runs to
  // the end of the file, the partial record dropped.
  ByteVec bytes = bpfprof::testing::read_file_bytes(path);
  const uint64_t zero = 0;
  std::memcpy(bytes.data() + 48, &zero, sizeof zero);
  auto old = FileReader::from_bytes(bytes);
  ASSERT_TRUE(old.ok()) << old.error().to_string();
  EXPECT_TRUE(old->truncated_header());
  EXPECT_EQ(count_samples(*old), 2);
}

TEST_F(RoundTripTest, CreateFailureNamesPath) {
  const std::string path = dir_.file("no/such/dir/perf.data");
  auto w = FileWriter::create(path, testing::two_attrs());
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().code, Errc::kIo);
  EXPECT_NE(w.error().message.find(path), std::string::npos);
  EXPECT_EQ(w.error().message.find('\n'), std::string::npos);
}

TEST_F(RoundTripTest, ExistingFileIsTruncatedAndMode0600) {
  const std::string path = dir_.file("old.data");
  { std::ofstream(path) << std::string(100000, 'x'); }
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  auto w = FileWriter::create(path, testing::two_attrs());
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->append(sample(101, 1)).ok());
  ASSERT_TRUE(w->close({}).ok());
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_LT(st.st_size, 1000);
}

TEST_F(RoundTripTest, EmptyFilesAreReplacedAndDevicesWritten) {
  OutputOpen keep;
  keep.keep_old = true;
  const std::string empty = dir_.file("empty.data");
  { std::ofstream(empty) << ""; }
  auto e = FileWriter::create(empty, testing::two_attrs(), keep);
  ASSERT_TRUE(e.ok()) << e.error().to_string();
  EXPECT_FALSE(e->rotated()) << "an empty file has nothing to keep";
  EXPECT_EQ(access((empty + ".old").c_str(), F_OK), -1);
  ASSERT_TRUE(e->close({}).ok());
  // A character device (a /dev/null of our own, under /dev/ as a path only
  // root can make one): written to, never renamed, chmod-ed, cut or removed,
  // as `record -o /dev/null` must leave /dev/null.
  const std::string dev = "/dev/bpfprof-test-null-" + std::to_string(::getpid());
  if (::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
    GTEST_SKIP() << "mknod of a null device in /dev here: " << std::strerror(errno);
  }
  ASSERT_EQ(::chmod(dev.c_str(), 0666), 0);
  auto w = FileWriter::create(dev, testing::two_attrs(), keep);
  ASSERT_TRUE(w.ok()) << w.error().to_string();
  EXPECT_FALSE(w->rotated());
  EXPECT_EQ(access((dev + ".old").c_str(), F_OK), -1);
  ASSERT_TRUE(w->append(sample(101, 1)).ok());
  ASSERT_TRUE(w->close({}).ok());
  auto again = FileWriter::create(dev, testing::two_attrs());
  ASSERT_TRUE(again.ok());
  again->abandon();
  struct stat st {};
  const bool still_there = ::lstat(dev.c_str(), &st) == 0;
  ::unlink(dev.c_str());
  ASSERT_TRUE(still_there) << "the device is still there";
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0666u);
  // The same device outside /dev is refused: anyone may make a FIFO or ask
  // root to write into a node they placed in a shared directory.
  const std::string fifo = dir_.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
  auto f = FileWriter::create(fifo, testing::two_attrs(), keep);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().message,
            fifo + " is a FIFO: refusing to write to it");
}

TEST_F(RoundTripTest, RotateOldAndAbandon) {
  OutputOpen keep;
  keep.keep_old = true;
  const std::string path = dir_.file("rot.data");
  { std::ofstream(path) << "previous"; }
  auto w = FileWriter::create(path, testing::two_attrs(), keep);
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(w->rotated());
  EXPECT_NE(access((path + ".old").c_str(), F_OK), -1);
  w->abandon();
  // The new file is gone and the previous one is back under its name.
  EXPECT_EQ(access((path + ".old").c_str(), F_OK), -1);
  std::ifstream in(path);
  std::string back;
  in >> back;
  EXPECT_EQ(back, "previous");
}

TEST(ReaderRefusesTest, ForeignAndUnsupportedHeaders) {
  std::vector<std::byte> h(kFileHeaderSize);
  auto put = [&](size_t at, uint64_t v) { std::memcpy(h.data() + at, &v, 8); };
  put(0, kMagicSwapped);
  auto r = FileReader::from_bytes(h);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kUnsupported);
  EXPECT_EQ(r.error().message, "big-endian perf.data not supported");

  // A pipe header followed by zeros: a record of size 0 right after it.
  put(0, kMagic);
  put(8, kPipeHeaderSize);
  r = FileReader::from_bytes(h);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kBadRecord);
  EXPECT_EQ(r.error().offset, std::optional<uint64_t>(kPipeHeaderSize));

  put(0, 0x1234);
  r = FileReader::from_bytes(h);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kBadMagic);

  r = FileReader::from_bytes(Bytes(h).first(5));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kTruncated);
}

TEST_F(RoundTripTest, CorruptFeatureIsSoftError) {
  const std::string path = dir_.file("feat.data");
  auto w = FileWriter::create(path, testing::two_attrs());
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->append(sample(101, 1)).ok());
  Features f;
  f.hostname = "h";
  f.bpf_btf = {{7, {std::byte{1}}}};
  ASSERT_TRUE(w->close(f).ok());
  std::vector<std::byte> bytes = bpfprof::testing::read_file_bytes(path);
  // The BTF payload is last: make its data_size claim more than there is.
  uint32_t huge = 1000;
  std::memcpy(bytes.data() + bytes.size() - 5, &huge, 4);
  auto r = FileReader::from_bytes(bytes);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->features().hostname, "h");
  ASSERT_EQ(r->feature_errors().size(), 1u);
  EXPECT_TRUE(r->feature_errors()[0].offset.has_value());
}

}  // namespace
}  // namespace bpfprof::perfdata
