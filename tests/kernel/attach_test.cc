// SPDX-License-Identifier: Apache-2.0
// Real kernel: where programs are attached (section 254). The workload
// attaches four programs for real — a tracepoint and a raw tracepoint its own
// syscalls fire, XDP on a veth pair of a network namespace it makes, and
// cgroup_skb/egress on a cgroup the test makes — and writes each program's
// attach point as truth. Once attached before the recording (listed at
// start), once during it (listed at end without the in-kernel capture,
// captured with it), once attached and detached during
// it (captured in the kernel as the links were made; cgroup_skb with
// BPF_PROG_ATTACH). The report, script and the section must name every
// point as the truth does; Linux perf still reads the file. Programs only
// ever run through BPF_PROG_TEST_RUN are `test_run only`. A classic tc
// (cls_bpf) filter is listed at start, during the recording (after a
// program of its type loads) and at end.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "perfdata/reader.h"
#include "testing/cgroup2.h"
#include "testing/paths.h"
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

// `report --format json --sort attach` of every BPF program instance
// (null, and a failure, when report fails).
nlohmann::json attach_report(const std::string& data) {
  RunResult rep = run({kBin + "/bpfprof", "report", "-q", "-i", data, "--format", "json",
                       "--sort", "attach", "--bpf-only", "--instances"});
  EXPECT_EQ(rep.exit_code, 0) << rep.err;
  return rep.exit_code == 0 ? nlohmann::json::parse(rep.out) : nlohmann::json();
}

std::map<uint32_t, nlohmann::json> programs_by_id(const nlohmann::json& report) {
  std::map<uint32_t, nlohmann::json> out;
  if (report.contains("programs")) {
    for (const auto& p : report["programs"]) out[p["id"].get<uint32_t>()] = p;
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
  // `prog_attach`: cgroup_skb was attached with BPF_PROG_ATTACH, without a link.
  void check(const std::string& data, const std::vector<Truth>& truth, uint32_t source,
             bool prog_attach = false) {
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
        if (prog_attach && t.point.starts_with("cgroup_skb/")) {
          EXPECT_EQ(e.link_id, 0u) << t.name << ": attached without a link";
        } else {
          EXPECT_NE(e.link_id, 0u) << t.name << ": attached through a link";
        }
        found = true;
      }
      EXPECT_TRUE(found) << t.name << " (" << t.id << ") has no entry";
    }

    nlohmann::json j = attach_report(data);
    std::map<uint32_t, nlohmann::json> programs = programs_by_id(j);
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
  // Without the in-kernel capture (--enrich user) only the end listing sees them.
  RunResult rec = run({kBin + "/bpfprof", "record", "-a", "-q", "-d", "1.5", "--enrich", "user",
                       "-o", data, "--", kBin + "/bpfprof-workload", "--attached", "--cgroup",
                       cgroup_.dir, "--truth", truth_path});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  check(data, read_truth(truth_path), perfdata::AttachEntry::kAtEnd);
}

TEST_F(AttachKernelTest, AttachedDuringRecordingAreCapturedNotListedAgainAtEnd) {
  // With the capture, the links made during the recording are captured at
  // their creation; the end listing finds the same points and adds nothing.
  const std::string truth_path = dir_.file("truth.json");
  const std::string data = dir_.file("during_captured.data");
  RunResult rec = run({kBin + "/bpfprof", "record", "-a", "-q", "-d", "1.5", "-o", data, "--",
                       kBin + "/bpfprof-workload", "--attached", "--cgroup", cgroup_.dir,
                       "--truth", truth_path});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  check(data, read_truth(truth_path), perfdata::AttachEntry::kCaptured);
}

TEST_F(AttachKernelTest, AttachedAndDetachedDuringRecordingAreCaptured) {
  // The workload attaches after the start listing and detaches 1 s later;
  // the recording goes on after it exits, so the end listing finds nothing:
  // only the capture at each link's creation (and BPF_PROG_ATTACH's) names them.
  const std::string truth_path = dir_.file("truth.json");
  const std::string data = dir_.file("captured.data");
  const std::string workload = kBin + "/bpfprof-workload --attached --attached-for 1s --prog-attach --cgroup " +
                               cgroup_.dir + " --truth " + truth_path;
  RunResult rec = run({kBin + "/bpfprof", "record", "-a", "-q", "-o", data, "--", "sh", "-c",
                       workload + " && sleep 0.3"});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  check(data, read_truth(truth_path), perfdata::AttachEntry::kCaptured, true);
}

// Classic tc: the workload's cls_bpf filter at the clsact ingress of its
// veth (netlink, no link, no bpf() attach the capture could see) is listed
// at start when attached before the recording, and during it when attached
// during it — also when it is removed before the end; named as the truth
// names it.
TEST_F(AttachKernelTest, ClassicTcFiltersAreListedAtStartAndDuring) {
  auto tc_truth = [](const std::string& path) {
    for (const Truth& t : read_truth(path)) {
      if (t.name == "attached_tc") return t;
    }
    ADD_FAILURE() << "no attached_tc in " << path;
    return Truth{};
  };
  auto check_tc = [&](const std::string& data, const Truth& t, uint32_t source) {
    ASSERT_TRUE(t.point.starts_with("tc/ingress/bpfprof1@netns:")) << t.point;
    auto reader = perfdata::FileReader::open(data);
    ASSERT_TRUE(reader.ok()) << reader.error().to_string();
    ASSERT_TRUE(reader->features().attach.has_value());
    size_t entries = 0;
    for (const perfdata::AttachEntry& e : reader->features().attach->entries) {
      if (e.prog_id != t.id) continue;
      EXPECT_EQ(e.point, t.point);
      EXPECT_EQ(e.source, source);
      EXPECT_EQ(e.link_id, 0u) << "a tc filter has no link";
      entries++;
    }
    EXPECT_EQ(entries, 1u);
    std::map<uint32_t, nlohmann::json> programs = programs_by_id(attach_report(data));
    ASSERT_TRUE(programs.count(t.id));
    EXPECT_EQ(programs[t.id]["attach"], t.point);
    RunResult perf = run({"perf", "script", "-i", data});
    EXPECT_EQ(perf.exit_code, 0) << perf.err.substr(0, 2000);
  };
  {
    const std::string truth_path = dir_.file("tc_before.json");
    Background workload({kBin + "/bpfprof-workload", "--attached", "--tc", "--truth", truth_path});
    ASSERT_EQ(workload.wait_for_line("ready"), "ready");
    const std::string data = dir_.file("tc_before.data");
    RunResult rec = run({kBin + "/bpfprof", "record", "-a", "-q", "-o", data, "--", "sleep", "0.5"});
    ASSERT_EQ(rec.exit_code, 0) << rec.err;
    ASSERT_EQ(workload.stop(SIGTERM), 0);
    check_tc(data, tc_truth(truth_path), perfdata::AttachEntry::kAtStart);
  }
  {
    const std::string truth_path = dir_.file("tc_during.json");
    const std::string data = dir_.file("tc_during.data");
    RunResult rec = run({kBin + "/bpfprof", "record", "-a", "-q", "-d", "1.5", "-o", data, "--",
                         kBin + "/bpfprof-workload", "--attached", "--tc", "--truth", truth_path});
    ASSERT_EQ(rec.exit_code, 0) << rec.err;
    check_tc(data, tc_truth(truth_path), perfdata::AttachEntry::kListed);
  }
  {
    // Attached for 2 s, detached 2 s before the end: the end listing cannot
    // see it. (2 s is 8 relist intervals: the test holds on a busy machine.)
    const std::string truth_path = dir_.file("tc_gone.json");
    const std::string data = dir_.file("tc_gone.data");
    RunResult rec = run({kBin + "/bpfprof", "record", "-a", "-q", "-d", "4", "-o", data, "--",
                         kBin + "/bpfprof-workload", "--attached", "--tc", "--attached-for", "2s",
                         "--truth", truth_path});
    ASSERT_EQ(rec.exit_code, 0) << rec.err;
    check_tc(data, tc_truth(truth_path), perfdata::AttachEntry::kListed);
  }
}

TEST_F(AttachKernelTest, ProgramsRunOnlyByTestRunAreTestRunOnly) {
  const std::string truth_path = dir_.file("truth.json");
  const std::string data = dir_.file("test_run.data");
  RunResult rec = run({kBin + "/bpfprof", "record", "-a", "-q", "-o", data, "--",
                       kBin + "/bpfprof-workload", "--programs", "3", "--lifetime", "200ms",
                       "--long-lived", "100ms", "--quiet", "--truth", truth_path});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  std::ifstream in(truth_path);
  const auto truth = nlohmann::json::parse(in)["programs"];
  ASSERT_GE(truth.size(), 4u);
  auto reader = perfdata::FileReader::open(data);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  ASSERT_TRUE(reader->features().attach.has_value());
  std::map<uint32_t, nlohmann::json> programs = programs_by_id(attach_report(data));
  for (const auto& t : truth) {
    const auto id = t["id"].get<uint32_t>();
    ASSERT_GT(t["test_runs"].get<uint64_t>(), 0u) << id;
    size_t entries = 0;
    for (const perfdata::AttachEntry& e : reader->features().attach->entries) {
      if (e.prog_id != id) continue;
      EXPECT_EQ(e.point, "test_run only") << id;
      EXPECT_EQ(e.source, perfdata::AttachEntry::kCaptured) << id;
      EXPECT_EQ(e.link_id, 0u) << id;
      entries++;
    }
    EXPECT_EQ(entries, 1u) << id;
    ASSERT_TRUE(programs.count(id)) << id;
    EXPECT_EQ(programs[id]["attach"], "test_run only") << id;
  }
}

}  // namespace
}  // namespace bpfprof::testing
