// SPDX-License-Identifier: Apache-2.0
// Real kernel: where programs are attached (section 254). The workload
// attaches four programs for real — a tracepoint and a raw tracepoint its own
// syscalls fire, XDP on a veth pair of a network namespace it makes, and
// cgroup_skb/egress on a cgroup the test makes — and writes each program's
// attach point as truth. Once attached before the recording (listed at
// start), once during it (listed at end). The report, script and the
// section must name every point as the truth does; Linux perf still reads
// the file.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "perfdata/reader.h"
#include "testing/cgroup2.h"
#include "testing/subprocess.h"

namespace bpfprof::testing {
namespace {

const std::string kBin = BPFPROF_BIN_DIR;

// The test's cgroup, removed however the test ends (the workload in it has
// exited by then).
struct Cgroup {
  std::string dir;
  ~Cgroup() {
    if (!dir.empty()) ::rmdir(dir.c_str());
  }
};

struct Truth {
  uint32_t id;
  std::string name, point;
};

std::vector<Truth> read_truth(const std::string& path) {
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  std::vector<Truth> out;
  for (const auto& p : j["programs"]) {
    out.push_back({p["id"].get<uint32_t>(), p["name"].get<std::string>(),
                   p["attach"].at(0).get<std::string>()});
  }
  return out;
}

class AttachKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = bpf_refusal(kBin);
    if (!why.empty()) BPFPROF_KERNEL_SKIP("BPF programs cannot be loaded here: " + why);
    const std::string mount = cgroup2_mount();
    if (mount.empty()) BPFPROF_KERNEL_SKIP("no cgroup v2 hierarchy mounted");
    cgroup_.dir = mount + "/bpfprof-attach-" + std::to_string(::getpid());
    ASSERT_EQ(::mkdir(cgroup_.dir.c_str(), 0755), 0) << cgroup_.dir;
  }

  // Every truth program's point in the recording: the section's entries with
  // `source`, the report's attach_points and attach key, script's BPF leaves.
  void check(const std::string& data, const std::vector<Truth>& truth, uint32_t source) {
    ASSERT_EQ(truth.size(), 4u);
    std::set<std::string> kinds;
    for (const Truth& t : truth) kinds.insert(t.point.substr(0, t.point.find('/')));
    EXPECT_EQ(kinds, (std::set<std::string>{"tracepoint", "raw_tp", "xdp", "cgroup_skb"}));

    auto reader = perfdata::FileReader::open(data);
    ASSERT_TRUE(reader.ok()) << reader.error().to_string();
    ASSERT_TRUE(reader->features().attach.has_value());
    for (const Truth& t : truth) {
      bool found = false;
      for (const perfdata::AttachEntry& e : reader->features().attach->entries) {
        if (e.prog_id != t.id) continue;
        EXPECT_EQ(e.point, t.point) << t.name;
        EXPECT_EQ(e.source, source) << t.name;
        EXPECT_NE(e.link_id, 0u) << t.name << ": attached through a link";
        found = true;
      }
      EXPECT_TRUE(found) << t.name << " (" << t.id << ") has no entry";
    }

    RunResult rep = run({kBin + "/bpfprof", "report", "-q", "-i", data, "--format", "json",
                         "--sort", "attach", "--bpf-only", "--instances"});
    ASSERT_EQ(rep.exit_code, 0) << rep.err;
    const auto j = nlohmann::json::parse(rep.out);
    std::map<uint32_t, nlohmann::json> programs;
    for (const auto& p : j["programs"]) programs[p["id"].get<uint32_t>()] = p;
    for (const Truth& t : truth) {
      ASSERT_TRUE(programs.count(t.id)) << t.name;
      EXPECT_EQ(programs[t.id]["attach"], t.point) << t.name;
      EXPECT_EQ(programs[t.id]["attach_points"], nlohmann::json::array({t.point})) << t.name;
    }
    // The sort key: every point with samples is a row of its own.
    std::set<std::string> rows;
    for (const auto& e : j["entries"]) rows.insert(e["attach"].get<std::string>());
    for (const Truth& t : truth) {
      if (programs[t.id]["samples"].get<uint64_t>() > 0) {
        EXPECT_TRUE(rows.count(t.point)) << t.point;
      }
    }

    // script's BPF leaves of these programs carry their point.
    RunResult script = run({kBin + "/bpfprof", "script", "-q", "-i", data, "--format", "json"});
    ASSERT_EQ(script.exit_code, 0) << script.err;
    std::map<uint32_t, std::string> point_of;
    for (const Truth& t : truth) point_of[t.id] = t.point;
    size_t ours = 0;
    std::istringstream lines(script.out);
    for (std::string line; std::getline(lines, line);) {
      const auto s = nlohmann::json::parse(line);
      if (!s.contains("bpf_prog_id")) continue;
      auto it = point_of.find(s["bpf_prog_id"].get<uint32_t>());
      if (it == point_of.end()) continue;
      EXPECT_EQ(s["attach"], it->second);
      ours++;
    }
    EXPECT_GT(ours, 0u) << "no sample in the attached programs";

    // Linux perf reads the file (it skips section 254 and our in-stream records).
    RunResult perf = run({"perf", "script", "-i", data});
    EXPECT_EQ(perf.exit_code, 0) << perf.err.substr(0, 2000);
  }

  Cgroup cgroup_;
  TempDir dir_;
};

TEST_F(AttachKernelTest, AttachedBeforeRecordingAreListedAtStart) {
  const std::string truth_path = dir_.file("truth.json");
  Background workload({kBin + "/bpfprof-workload", "--attached", "--cgroup", cgroup_.dir,
                       "--truth", truth_path});
  ASSERT_EQ(workload.wait_for_line("ready"), "ready");
  const std::string data = dir_.file("before.data");
  RunResult rec = run({kBin + "/bpfprof", "record", "-a", "-q", "-o", data, "--", "sleep", "1"});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  ASSERT_EQ(workload.stop(SIGTERM), 0);
  check(data, read_truth(truth_path), perfdata::AttachEntry::kAtStart);
}

TEST_F(AttachKernelTest, AttachedDuringRecordingAreListedAtEnd) {
  // The workload starts after the recorder's start listing and is still
  // attached when the recording stops (-d), before it is sent SIGTERM.
  const std::string truth_path = dir_.file("truth.json");
  const std::string data = dir_.file("during.data");
  RunResult rec = run({kBin + "/bpfprof", "record", "-a", "-q", "-d", "1.5", "-o", data, "--",
                       kBin + "/bpfprof-workload", "--attached", "--cgroup", cgroup_.dir,
                       "--truth", truth_path});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  check(data, read_truth(truth_path), perfdata::AttachEntry::kAtEnd);
}

}  // namespace
}  // namespace bpfprof::testing
