// SPDX-License-Identifier: Apache-2.0
// `bpfprof record -z` of the BPF workload: the ring data is in COMPRESSED
// records, every program's KSYMBOL comes back through them with its name and
// range, bpfprof's report counts what the reader sees, and Linux perf 6.1
// (report, script) reads the file without a word and counts the same samples,
// also after the recorder was killed.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "perf/abi.h"
#include "perfdata/reader.h"
#include "testing/paths.h"
#include "testing/recording_readback.h"
#include "testing/subprocess.h"
#include "testing/workload_recording.h"

namespace bpfprof::testing {
namespace {

const std::string kBin = BPFPROF_BIN_DIR;

class CompressedRecordTest : public WorkloadRecordingTest<CompressedRecordTest> {
 protected:
  static void SetUpTestSuite() {
    g = new WorkloadRecording;
    WorkloadRun run;
    run.record_flags = {"-a", "-g", "-F", "999", "-q", "-z"};
    run.workload_args = {"--programs",         "12", "--lifetime",   "2ms,50ms",
                         "--subprog-programs", "2",  "--long-lived", "1s"};
    if (!g->record_workload(kBin, run)) return;
    rec = new Recording(read_recording(g->data));
  }
  static void TearDownTestSuite() {
    delete rec;
    rec = nullptr;
    WorkloadRecordingTest::TearDownTestSuite();
  }
  static inline Recording* rec = nullptr;
};

TEST_F(CompressedRecordTest, RingDataIsInCompressedRecords) {
  auto r = perfdata::FileReader::open(g->data);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_TRUE(r->for_each_record([](const perf::RecordView&, uint64_t) {}).ok());
  EXPECT_GT(r->stats().compressed_records, 0u);
  ASSERT_TRUE(r->features().compression.has_value());
  EXPECT_EQ(r->features().compression->type, 1u);
  EXPECT_EQ(r->features().compression->level, 1u);
  EXPECT_GT(r->features().compression->mmap_len, 0u);
  EXPECT_GE(r->features().compression->ratio, 2u);
  std::printf("%llu COMPRESSED records, ratio %u\n",
              static_cast<unsigned long long>(r->stats().compressed_records),
              r->features().compression->ratio);
}

TEST_F(CompressedRecordTest, EveryWorkloadFunctionHasItsKsymbol) {
  for (const TruthProgram& p : g->programs) {
    for (const TruthFunction& f : p.functions) {
      const bool found =
          std::any_of(rec->ksymbols.begin(), rec->ksymbols.end(), [&](const auto& k) {
            return !k.unregister && k.addr == f.addr && k.len == f.len && k.name == f.ksym;
          });
      EXPECT_TRUE(found) << f.ksym << " of program " << p.id;
    }
  }
}

TEST_F(CompressedRecordTest, ReportCountsWhatTheReaderSeesAndNamesThePrograms) {
  RunResult report = run({kBin + "/bpfprof", "report", "-q", "-i", g->data, "--format", "json"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const nlohmann::json j = nlohmann::json::parse(report.out);
  EXPECT_EQ(j.at("samples").get<uint64_t>(), rec->samples.size());
  std::set<std::string> names;
  for (const auto& p : j.at("programs")) names.insert(p.at("name").get<std::string>());
  const nlohmann::json& longest = g->long_lived();
  ASSERT_FALSE(longest.is_null());
  EXPECT_TRUE(names.count(longest.at("name").get<std::string>()))
      << "the long-lived program burned 1 s: report names it";
}

TEST_F(CompressedRecordTest, LinuxPerfReadsItAndCountsTheSameSamples) {
  RunResult script = run({"perf", "script", "-i", g->data, "-F", "time,ip,sym", "-G", "--ns"});
  ASSERT_EQ(script.exit_code, 0) << script.err;
  EXPECT_EQ(script.err, "") << "perf script warned";
  const auto lines = static_cast<size_t>(std::count(script.out.begin(), script.out.end(), '\n'));
  EXPECT_EQ(lines, rec->samples.size());
  RunResult report = run({"perf", "report", "-i", g->data, "--stdio", "--sort", "sym"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_EQ(report.err, "") << "perf report warned";
  RunResult header = run({"perf", "report", "-i", g->data, "--header-only"});
  EXPECT_NE(header.out.find("# compressed : Zstd, level = 1"), std::string::npos) << header.out;
}

// A -z recorder killed with SIGKILL: no feature sections, yet perf 6.1
// decompresses the rounds on disk (feature 27 rides in a HEADER_FEATURE
// record at the start of the data) and counts the samples bpfprof counts.
TEST_F(CompressedRecordTest, AKilledRecordersFileIsReadByPerfToo) {
  const std::string data = g->dir.file("killed.data");
  {
    Background recorder(
        {kBin + "/bpfprof", "record", "-a", "-g", "-F", "999", "-q", "-z", "-o", data});
    uint64_t data_size = 0;
    for (int i = 0; i < 100 && data_size == 0; i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::vector<std::byte> b = read_file_bytes(data);
      if (b.size() >= 104) std::memcpy(&data_size, b.data() + 48, sizeof data_size);
    }
    ASSERT_GT(data_size, 0u) << "the recorder never finished a round";
    std::this_thread::sleep_for(std::chrono::milliseconds(2000));
    EXPECT_EQ(recorder.stop(SIGKILL), 128 + SIGKILL);
  }
  Recording killed = read_recording(data);
  ASSERT_GT(killed.samples.size(), 100u);
  RunResult script = run({"perf", "script", "-i", data, "-F", "time,ip", "-G", "--ns"});
  ASSERT_EQ(script.exit_code, 0) << script.err;
  EXPECT_EQ(script.err, "") << "perf script warned";
  const auto lines = static_cast<size_t>(std::count(script.out.begin(), script.out.end(), '\n'));
  EXPECT_EQ(lines, killed.samples.size());
  auto r = perfdata::FileReader::open(data);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_TRUE(r->features_in_stream());
}

}  // namespace
}  // namespace bpfprof::testing
