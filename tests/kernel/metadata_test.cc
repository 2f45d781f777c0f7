// SPDX-License-Identifier: Apache-2.0
// Real kernel, real tools: the bpf_metadata_* variables of BPF programs as a
// recording stores them (section 248), against what `bpftool prog show`
// prints under "metadata" while the programs are alive. bpfprof-workload's
// burner object has two (a string and a u32); one of its programs is held
// from before the recording starts (read by id at start), another is loaded
// during it (captured at load; its .rodata map read at the pass that hands
// it). The report lists both programs' variables in JSON and under -v, and
// perf 6.1 reads the file without a word. Programs that live a few
// milliseconds, unloaded before the pass that hands them, keep theirs too:
// the capture copies the .rodata value when the map is captured.

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "testing/paths.h"
#include "testing/subprocess.h"

namespace bpfprof::testing {
namespace {

using Json = nlohmann::json;

const std::string kBin = BPFPROF_BIN_DIR;

// bpftool's "metadata" of program `id`, values typed as it types them
// (strings, numbers, booleans): the report's JSON must be the same.
Json bpftool_metadata(uint32_t id) {
  RunResult r = run({"bpftool", "-j", "prog", "show", "id", std::to_string(id)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return Json::object();
  const Json p = Json::parse(r.out);
  return p.contains("metadata") ? p["metadata"] : Json::object();
}

// The lines `bpftool prog show` (plain) prints under "metadata:" for program
// `id`, without their indent ("kinds = 3").
std::vector<std::string> bpftool_plain_metadata(uint32_t id) {
  RunResult r = run({"bpftool", "prog", "show", "id", std::to_string(id)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> out;
  bool in = false;
  size_t at = 0;
  while (at < r.out.size()) {
    size_t end = r.out.find('\n', at);
    if (end == std::string::npos) end = r.out.size();
    const std::string line = r.out.substr(at, end - at);
    at = end + 1;
    const size_t text = line.find_first_not_of(" \t");
    if (text == std::string::npos) continue;
    if (line.substr(text) == "metadata:") {
      in = true;
    } else if (in && text >= 2) {
      out.push_back(line.substr(text));
    } else {
      in = false;
    }
  }
  return out;
}

uint32_t ready_id(Background& hold) {
  const std::string line = hold.wait_for_line("ready");
  EXPECT_FALSE(line.empty()) << "bpfprof-workload --hold never became ready";
  return line.empty() ? 0 : static_cast<uint32_t>(std::stoul(line.substr(6)));
}

class MetadataKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (run({"bpftool", "version"}).exit_code != 0) BPFPROF_KERNEL_SKIP("bpftool is not installed");
    if (std::string why = bpf_refusal(kBin); !why.empty()) BPFPROF_KERNEL_SKIP(why);
  }
};

// perf 6.1 reads the file silently: 248 is a section it skips, and an
// in-stream record of a type it skips.
void expect_perf_reads_silently(const std::string& data) {
  RunResult perf_report = run({"perf", "report", "--stdio", "-i", data});
  EXPECT_EQ(perf_report.exit_code, 0) << perf_report.err;
  EXPECT_EQ(perf_report.err, "") << "perf report warned";
  RunResult perf_script = run({"perf", "script", "-i", data});
  EXPECT_EQ(perf_script.exit_code, 0) << perf_script.err;
  EXPECT_EQ(perf_script.err, "") << "perf script warned";
}

TEST_F(MetadataKernelTest, ProgramsThereAtStartAndLoadedDuringShowBpftoolsMetadata) {
  TempDir dir;
  const std::string data = dir.file("metadata.data");
  Background before({kBin + "/bpfprof-workload", "--hold", "--quiet"});
  const uint32_t at_start = ready_id(before);
  ASSERT_NE(at_start, 0u);
  const auto want_start = bpftool_metadata(at_start);
  const std::vector<std::string> plain = bpftool_plain_metadata(at_start);

  Background rec(
      {kBin + "/bpfprof", "record", "-q", "-a", "-F", "99", "-o", data, "--", "sleep", "2"});
  ASSERT_TRUE(wait_for_data(data)) << "the recorder never finished a round";
  Background during({kBin + "/bpfprof-workload", "--hold", "--quiet"});
  const uint32_t loaded = ready_id(during);
  ASSERT_NE(loaded, 0u);
  const auto want_loaded = bpftool_metadata(loaded);
  ASSERT_EQ(rec.stop(0), 0);
  // Held until the recording ended: the file must not need them alive.
  EXPECT_EQ(during.stop(SIGINT), 0);
  EXPECT_EQ(before.stop(SIGINT), 0);

  // What the workload's object declares, as bpftool printed it: the u32 a
  // number.
  const Json declared = {{"workload", "bpfprof-workload burner"}, {"kinds", 3}};
  EXPECT_EQ(want_start, declared);
  EXPECT_EQ(want_loaded, declared);

  RunResult rep =
      run({kBin + "/bpfprof", "report", "-q", "-i", data, "--format", "json", "--instances"});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  const Json report = Json::parse(rep.out);
  std::map<uint32_t, Json> got;
  for (const auto& p : report["programs"]) {
    const uint32_t id = p["id"].get<uint32_t>();
    if (id != at_start && id != loaded) continue;
    got[id] = p["metadata"];
    std::cout << "program " << id << " load_ns " << p["load_ns"] << " metadata "
              << p["metadata"].dump() << "\n";
    if (id == at_start) {
      EXPECT_EQ(p["load_ns"], 0u) << "program " << id << " was there at start";
    } else {
      EXPECT_GT(p["load_ns"], 0u) << "program " << id << " was loaded during it";
    }
  }
  ASSERT_EQ(got.size(), 2u) << "the report lists " << got.size() << " of programs " << at_start
                            << " and " << loaded;
  EXPECT_EQ(got[at_start], want_start);
  EXPECT_EQ(got[loaded], want_loaded);

  RunResult verbose = run({kBin + "/bpfprof", "report", "-q", "-v", "-i", data, "--instances"});
  ASSERT_EQ(verbose.exit_code, 0) << verbose.err;
  // Each line as bpftool's plain output has it (strings quoted).
  ASSERT_EQ(plain.size(), 2u) << "bpftool prog show printed no metadata lines";
  for (const std::string& line : plain) {
    EXPECT_NE(verbose.out.find("metadata: " + line + "\n"), std::string::npos)
        << line << "\n"
        << verbose.out.substr(0, 4000);
  }
  EXPECT_NE(verbose.out.find("metadata: workload = \"bpfprof-workload burner\"\n"),
            std::string::npos);
  EXPECT_NE(verbose.out.find("metadata: kinds = 3\n"), std::string::npos);

  expect_perf_reads_silently(data);
}

TEST_F(MetadataKernelTest, ShortLivedProgramsKeepTheirMetadata) {
  TempDir dir;
  const std::string data = dir.file("short.data");
  const std::string truth_path = dir.file("truth.json");
  // One program of the same object held alive: what bpftool prints for it.
  Background held({kBin + "/bpfprof-workload", "--hold", "--quiet"});
  const uint32_t held_id = ready_id(held);
  ASSERT_NE(held_id, 0u);
  const auto want = bpftool_metadata(held_id);
  EXPECT_EQ(held.stop(SIGINT), 0);
  ASSERT_EQ(want, (Json{{"workload", "bpfprof-workload burner"}, {"kinds", 3}}));

  // 60 burner programs of 2 and 5 ms, each unloaded long before the
  // recorder's next pass could read its .rodata map.
  RunResult rec = run({kBin + "/bpfprof",
                       "record",
                       "-a",
                       "-F",
                       "99",
                       "-o",
                       data,
                       "--",
                       kBin + "/bpfprof-workload",
                       "--programs",
                       "60",
                       "--lifetime",
                       "2ms,5ms",
                       "--subprog-programs",
                       "0",
                       "--long-lived",
                       "50ms",
                       "--quiet",
                       "--truth",
                       truth_path});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  std::cout << rec.err;
  // No .rodata map was gone before its metadata was stored (programs other
  // loaders of the host load are captured the same way).
  EXPECT_EQ(rec.err.find("metadata gone first"), std::string::npos) << rec.err;
  EXPECT_EQ(rec.err.find("past the captured value"), std::string::npos) << rec.err;

  std::ifstream truth_file(truth_path);
  const Json truth = Json::parse(truth_file);
  std::set<uint32_t> loaded;
  for (const auto& p : truth["programs"]) loaded.insert(p["id"].get<uint32_t>());
  ASSERT_GE(loaded.size(), 61u);

  RunResult rep =
      run({kBin + "/bpfprof", "report", "-q", "-i", data, "--format", "json", "--instances"});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  const Json report = Json::parse(rep.out);
  size_t listed = 0, with_metadata = 0;
  for (const auto& p : report["programs"]) {
    const uint32_t id = p["id"].get<uint32_t>();
    if (!loaded.count(id)) continue;
    listed++;
    const Json got = p.contains("metadata") ? p["metadata"] : Json::object();
    EXPECT_EQ(got, want) << "program " << id;
    if (got == want) with_metadata++;
  }
  std::printf("short-lived metadata: %zu of %zu programs loaded during the recording\n",
              with_metadata, loaded.size());
  EXPECT_EQ(listed, loaded.size());
  EXPECT_EQ(with_metadata, loaded.size());

  expect_perf_reads_silently(data);
}

}  // namespace
}  // namespace bpfprof::testing
