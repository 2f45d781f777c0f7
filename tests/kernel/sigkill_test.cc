// SPDX-License-Identifier: Apache-2.0
// A recorder killed with SIGKILL (the OOM killer, an orchestrator's timeout)
// loses nothing that reached the disk: the workload's programs, all loaded
// more than a flush interval (500 ms) before the kill, have their
// BPF_PROG_INFO; every kernel frame is named from the in-stream kallsyms
// snapshot; the host and event names are there; and Linux perf reads the
// samples up to the last flushed round.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "perfdata/reader.h"
#include "testing/paths.h"
#include "testing/recording_readback.h"
#include "testing/subprocess.h"

namespace bpfprof::testing {
namespace {

const std::string kBin = BPFPROF_BIN_DIR;

// The header's data.size: nonzero once the recorder finished its first round.
uint64_t header_data_size(const std::string& path) {
  std::vector<std::byte> b = read_file_bytes(path);
  if (b.size() < 104) return 0;
  uint64_t v = 0;
  std::memcpy(&v, b.data() + 48, sizeof v);
  return v;
}

struct Fixture {
  std::string enrich;  // --enrich: in-kernel (the capture) or user (the enricher)
  TempDir dir;
  std::string data, truth;
  std::string skip_reason;
  int record_status = 0;
  std::vector<TruthProgram> programs;
  Recording rec;
};
// One recording per enrichment path, made when its first test runs: both
// hand what they learn to the file as in-stream records.
std::map<std::string, std::unique_ptr<Fixture>> fixtures;

class SigkillTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void record(Fixture* g) {
    g->data = g->dir.file("killed.data");
    g->truth = g->dir.file("truth.json");
    g->skip_reason = bpf_refusal(kBin);
    if (!g->skip_reason.empty()) return;
    if (::geteuid() != 0) {
      g->skip_reason = "not root: record needs CAP_PERFMON and CAP_BPF";
      return;
    }
    Background recorder({kBin + "/bpfprof", "record", "-a", "-g", "-F", "999", "-q", "--enrich",
                         g->enrich, "-o", g->data});
    // Started: the first round (synthesis, in-stream host and kallsyms) is on disk.
    for (int i = 0; i < 300 && header_data_size(g->data) == 0; i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_GT(header_data_size(g->data), 0u) << "the recorder never finished a round";
    RunResult w = run({kBin + "/bpfprof-workload", "--programs", "30", "--lifetime", "50ms,200ms",
                       "--subprog-programs", "4", "--long-lived", "1s", "--truth", g->truth,
                       "--quiet"});
    ASSERT_EQ(w.exit_code, 0) << w.err;
    // Three flush intervals after the last program loaded.
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    g->record_status = recorder.stop(SIGKILL);
    g->programs = read_truth(g->truth);
    g->rec = read_recording(g->data);
  }
  static void TearDownTestSuite() { fixtures.clear(); }
  void SetUp() override {
    auto& f = fixtures[GetParam()];
    if (!f) {
      f = std::make_unique<Fixture>();
      f->enrich = GetParam();
      record(f.get());
    }
    g = f.get();
    if (!g->skip_reason.empty()) BPFPROF_KERNEL_SKIP(g->skip_reason);
  }
  Fixture* g = nullptr;
};

TEST_P(SigkillTest, TheRecorderWasKilledBeforeClosingTheFile) {
  EXPECT_EQ(g->record_status, 128 + SIGKILL);
  auto r = perfdata::FileReader::open(g->data);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_TRUE(r->features_in_stream());
  EXPECT_TRUE(r->feature_errors().empty()) << r->feature_errors().front().to_string();
  EXPECT_FALSE(r->features().hostname.value_or("").empty());
  EXPECT_FALSE(r->features().arch.value_or("").empty());
  ASSERT_EQ(r->attrs().size(), 2u);
  EXPECT_FALSE(r->attrs()[0].name.empty());
}

TEST_P(SigkillTest, EveryWorkloadProgramHasItsInfo) {
  ASSERT_FALSE(g->programs.empty());
  size_t missing = 0;
  for (const TruthProgram& p : g->programs) {
    if (!g->rec.prog_info.count(p.id)) {
      ++missing;
      ADD_FAILURE() << "no BPF_PROG_INFO for program " << p.id << " (" << p.name << ")";
    }
  }
  EXPECT_EQ(missing, 0u);
  EXPECT_FALSE(g->rec.btf_sizes.empty());
}

TEST_P(SigkillTest, ReportNamesKernelFramesAndHasEveryProgramsInfo) {
  RunResult report = run({kBin + "/bpfprof", "report", "-q", "-g", "--instances", "-i", g->data,
                           "--format", "json"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const nlohmann::json j = nlohmann::json::parse(report.out);
  EXPECT_GT(j.at("samples").get<uint64_t>(), 0u);
  const nlohmann::json& d = j.at("diagnostics");
  EXPECT_EQ(d.at("unknown_frames.no_kallsyms").get<uint64_t>(), 0u) << d.dump();
  EXPECT_EQ(d.at("feature_sections_unreadable").get<uint64_t>(), 0u) << d.dump();
  EXPECT_FALSE(j.at("host").get<std::string>().empty());
  // Programs without info: only ones that were gone before the enricher
  // could take a reference, none of the workload's.
  std::set<uint32_t> workload;
  for (const TruthProgram& p : g->programs) workload.insert(p.id);
  for (const auto& p : j.at("programs")) {
    const uint32_t id = p.at("id").get<uint32_t>();
    if (workload.count(id)) {
      EXPECT_TRUE(g->rec.prog_info.count(id)) << id;
    }
  }
}

TEST_P(SigkillTest, LinuxPerfReadsTheSamples) {
  RunResult script = run({"perf", "script", "-i", g->data, "-F", "time,ip,sym", "--ns"});
  ASSERT_EQ(script.exit_code, 0) << script.err;
  EXPECT_EQ(script.err, "") << "perf script warned";
  EXPECT_GT(std::count(script.out.begin(), script.out.end(), '\n'), 100) << script.out.substr(0, 500);
  RunResult report = run({"perf", "report", "-i", g->data, "--stdio", "--sort", "sym"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_EQ(report.err, "") << "perf report warned";
  EXPECT_NE(report.out.find("long_burner"), std::string::npos) << report.out.substr(0, 2000);
}

INSTANTIATE_TEST_SUITE_P(Enrich, SigkillTest, ::testing::Values("in-kernel", "user"),
                         [](const auto& info) { return info.param == "user" ? "user" : "in_kernel"; });

}  // namespace
}  // namespace bpfprof::testing
