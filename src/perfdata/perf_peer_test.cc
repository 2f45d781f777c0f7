// SPDX-License-Identifier: Apache-2.0
// Peer test: Linux perf 6.1 reads a file written by FileWriter. Two attrs
// (cpu-clock sampling + dummy side-band), synthesized COMM, a BPF KSYMBOL and
// BPF_EVENT load, kernel samples inside the BPF program, BPF_PROG_INFO, and
// the kallsyms snapshot section.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "perfdata/kallsyms_table.h"
#include "perfdata/reader.h"
#include "testing/perfdata_fixtures.h"
#include "perfdata/writer.h"
#include "testing/subprocess.h"

namespace bpfprof::perfdata {
namespace {

constexpr const char* kPerf = "/usr/bin/perf";
constexpr uint64_t kProgAddr = 0xffffffffc0001000;
constexpr uint32_t kProgId = 42;
constexpr const char* kKsym = "bpf_prog_0123456789abcdef_demo";

bpf::ProgInfo one_function_prog() {
  bpf::ProgInfo p = testing::demo_prog(kProgId, kProgAddr);
  p.jited_ksyms = {kProgAddr};
  p.jited_func_lens = {0x100};
  p.prog_tags.resize(1);
  p.func_info.resize(sizeof(bpf_func_info));
  p.line_info.resize(2 * sizeof(bpf_line_info));
  p.jited_line_info = {kProgAddr, kProgAddr + 0x10};
  return p;
}

void write_peer_file(const std::string& path) {
  using namespace bpfprof::testing;
  auto w = FileWriter::create(path, testing::two_attrs());
  ASSERT_TRUE(w.ok()) << w.error().to_string();
  // Synthesized records: time 0 and id 0, as perf record writes them.
  const TrailerValues synth{1234, 1234, 0, 0, 0, 0};
  const uint8_t tag[8] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};
  ByteVec head = concat({
      comm_record(testing::kSampleType, 1234, 1234, "demo", synth),
      ksymbol_record(testing::kSampleType, kProgAddr, 0x100, perf::kKsymTypeBpf, 0, kKsym, synth),
      bpf_event_record(testing::kSampleType, perf::kBpfEventProgLoad, 0, kProgId, tag, synth),
  });
  ASSERT_TRUE(w->append(head).ok());
  ASSERT_TRUE(w->finish_round().ok());
  for (uint64_t i = 0; i < 5; ++i) {
    SampleValues s;
    s.id = testing::kSampleId + (i & 1);
    s.ip = kProgAddr + 0x10;
    s.pid = s.tid = 1234;
    s.time = 1000000 + i * 1000;
    s.cpu = static_cast<uint32_t>(i & 1);
    s.period = 10000;
    ASSERT_TRUE(w->append(sample_record(testing::kSampleType, s, perf::kMiscKernel)).ok());
  }
  ASSERT_TRUE(w->finish_round().ok());
  Features f = host_features();
  f.cmdline = {"/usr/bin/bpfprof", "record"};
  f.first_sample_time = 1000000;
  f.last_sample_time = 1004000;
  f.bpf_prog_info = {one_function_prog()};
  // bpfprof's own kallsyms section (250): perf skips feature bits it does not know.
  f.kallsyms = "ffffffff81000000 T _text\nffffffff81001000 T do_one_initcall\n";
  Status s = w->close(f);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
}

class PerfPeerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kPerf, X_OK) != 0) GTEST_SKIP() << kPerf << " is not installed";
    write_peer_file(path_);
  }
  bpfprof::testing::TempDir dir_;
  std::string path_ = dir_.file("peer.data");
};

TEST_F(PerfPeerTest, ScriptNamesBpfSamples) {
  auto r = bpfprof::testing::run({kPerf, "script", "-i", path_, "-F", "comm,ip,sym"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  int lines = 0, named = 0;
  size_t pos = 0;
  while (pos < r.out.size()) {
    size_t nl = r.out.find('\n', pos);
    std::string line = r.out.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? r.out.size() : nl + 1;
    if (line.empty()) continue;
    ++lines;
    if (line.find("demo") != std::string::npos && line.find("ffffffffc0001010") != std::string::npos &&
        line.find(kKsym) != std::string::npos)
      ++named;
  }
  EXPECT_EQ(lines, 5) << r.out;
  EXPECT_EQ(named, 5) << r.out;
  EXPECT_EQ(r.err.find("arning"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("rror"), std::string::npos) << r.err;
}

TEST_F(PerfPeerTest, HeaderListsBpfProgInfo) {
  auto r = bpfprof::testing::run({kPerf, "report", "-i", path_, "--header-only"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("bpf_prog_info"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bpf_prog_info 42: " + std::string(kKsym)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cpu-clock"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dummy:u"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("arning"), std::string::npos) << r.err;
}

TEST_F(PerfPeerTest, KallsymsSectionReadsBackAndPerfIgnoresIt) {
  auto r = FileReader::open(path_);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_TRUE(r->has_feature(kFeatBpfprofKallsyms));
  auto table = KallsymsTable::open(r->features().kallsyms_packed, r->features().kallsyms_packed_at);
  ASSERT_TRUE(table.ok()) << table.error().to_string();
  ASSERT_EQ(table->size(), 2u);
  EXPECT_EQ(table->name(1), "do_one_initcall");
  EXPECT_TRUE(r->feature_errors().empty());
  EXPECT_EQ(r->stats().unknown_features, 0u);
  // perf lists the features it knows and does not complain about ours.
  auto h = bpfprof::testing::run({kPerf, "report", "-i", path_, "--header-only"});
  EXPECT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(h.err, "");
  EXPECT_NE(h.out.find("# hostname"), std::string::npos) << h.out;
}

}  // namespace
}  // namespace bpfprof::perfdata
