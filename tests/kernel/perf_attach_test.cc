// SPDX-License-Identifier: Apache-2.0
// Real kernel: programs attached through a perf event the classic way
// (perf_event_open of a tracepoint, then PERF_EVENT_IOC_SET_BPF; no BPF
// link, so no capture sees it) are named from BPF_TASK_FD_QUERY on the
// perf-event fds of the process holding them, as `bpftool perf` lists them.
// Two attachers: the workload's `--price tracepoint_ioctl`, and a real
// bpftrace one-liner, recorded with `bpfprof record -a` while `bpftool perf`
// is asked what is attached.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "testing/paths.h"
#include "testing/subprocess.h"
#include "testing/workload_recording.h"

namespace bpfprof::testing {
namespace {

const std::string kBin = BPFPROF_BIN_DIR;

nlohmann::json report_json(const std::string& data) {
  RunResult rep = run({kBin + "/bpfprof", "report", "-q", "-i", data, "--format", "json",
                       "--instances"});
  EXPECT_EQ(rep.exit_code, 0) << rep.err;
  return rep.exit_code == 0 ? nlohmann::json::parse(rep.out) : nlohmann::json();
}

uint64_t diagnostic(const nlohmann::json& report, const std::string& name) {
  const auto& d = report["diagnostics"];
  return d.contains(name) ? d[name].get<uint64_t>() : 0;
}

// bpf_attach_unknown counts exactly the programs without a point.
void expect_unknown_counts_only_unnamed(const nlohmann::json& report) {
  uint64_t unnamed = 0;
  for (const auto& p : report["programs"]) unnamed += p["attach_points"].empty();
  EXPECT_EQ(diagnostic(report, "bpf_attach_unknown"), unnamed);
}

struct State {
  std::string tracefs_refused;
  WorkloadRecording classic;
};

class PerfAttachKernelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g = new State;
    g->tracefs_refused = mount_tracefs();
    if (!g->tracefs_refused.empty()) return;
    WorkloadRun what;
    what.record_flags = {"-q", "-a", "-F", "99"};
    what.truth = false;
    what.workload_args = {"--price", "tracepoint_ioctl", "--price-ops", "600000"};
    (void)g->classic.record_workload(kBin, what);
  }
  static void TearDownTestSuite() {
    delete g;
    g = nullptr;
  }
  void SetUp() override {
    if (!g->tracefs_refused.empty()) BPFPROF_KERNEL_SKIP("no tracefs: " + g->tracefs_refused);
  }
  static inline State* g = nullptr;
};

TEST_F(PerfAttachKernelTest, AClassicTracepointAttachIsNamedWithItsHolder) {
  if (!g->classic.skip_reason.empty()) BPFPROF_KERNEL_SKIP(g->classic.skip_reason);
  ASSERT_EQ(g->classic.record.exit_code, 0) << g->classic.record.err;
  const nlohmann::json report = report_json(g->classic.data);
  ASSERT_TRUE(report.contains("programs"));
  std::vector<nlohmann::json> price;
  for (const auto& p : report["programs"]) {
    if (p["name"] == "price_map") price.push_back(p);
  }
  ASSERT_EQ(price.size(), 1u) << report["programs"].dump(1);
  const nlohmann::json& p = price[0];
  EXPECT_EQ(p["attach"], "tracepoint/raw_syscalls/sys_enter") << p.dump(1);
  // The workload loaded it and holds the perf event: the same process.
  ASSERT_EQ(p["attach_details"].size(), 1u) << p.dump(1);
  const nlohmann::json& d = p["attach_details"][0];
  EXPECT_EQ(d["point"], "tracepoint/raw_syscalls/sys_enter");
  EXPECT_EQ(d["via"], "task_fd_query");
  EXPECT_EQ(d["by"], p["owner"]) << p.dump(1);
  expect_unknown_counts_only_unnamed(report);
}

// bpftool perf -j while bpftrace runs: its entries (pid, prog_id,
// tracepoint), once it lists some of `pid`'s.
nlohmann::json bpftool_perf_of(pid_t pid, const Background& recorder) {
  for (int i = 0; i < 100; i++) {
    RunResult r = run({"bpftool", "-j", "perf"});
    if (r.exit_code == 0 && !r.out.empty()) {
      nlohmann::json mine = nlohmann::json::array();
      for (const auto& e : nlohmann::json::parse(r.out)) {
        if (e["pid"] == pid) mine.push_back(e);
      }
      if (!mine.empty()) return mine;
    }
    if (::kill(recorder.pid(), 0) != 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return nlohmann::json::array();
}


TEST_F(PerfAttachKernelTest, BpftraceProgramsAreNamedAsBpftoolPerfListsThem) {
  if (run({"bpftrace", "--version"}).exit_code != 0) {
    BPFPROF_KERNEL_SKIP("bpftrace is not installed (scripts/install-deps.sh installs it)");
  }
  if (std::string why = bpf_refusal(kBin); !why.empty()) BPFPROF_KERNEL_SKIP(why);
  TempDir dir;
  const std::string data = dir.file("bpftrace.data");
  // timeout runs bpftrace for 2 s, then SIGINT: it prints its map and exits.
  Background rec({kBin + "/bpfprof", "record", "-q", "-a", "-F", "99", "-o", data, "--",
                  "timeout", "-s", "INT", "2", "bpftrace", "-q", "-e",
                  "tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }"});
  const pid_t timeout_pid = child_named(rec.pid(), "timeout");
  ASSERT_NE(timeout_pid, 0) << "timeout did not start under bpfprof record";
  const pid_t bpftrace = child_named(timeout_pid, "bpftrace");
  ASSERT_NE(bpftrace, 0) << "bpftrace did not start";
  const nlohmann::json listed = bpftool_perf_of(bpftrace, rec);
  // And its programs' maps, while they are alive (maps_test.cc compares
  // every field; here the ids, beside the attach points).
  std::map<uint32_t, std::vector<uint32_t>> map_ids;
  for (const auto& e : listed) {
    RunResult show = run({"bpftool", "-j", "prog", "show", "id", e["prog_id"].dump()});
    ASSERT_EQ(show.exit_code, 0) << show.err;
    const nlohmann::json p = nlohmann::json::parse(show.out);
    map_ids[e["prog_id"].get<uint32_t>()] =
        p.contains("map_ids") ? p["map_ids"].get<std::vector<uint32_t>>() : std::vector<uint32_t>{};
  }
  ASSERT_EQ(rec.stop(0), 0);
  ASSERT_FALSE(listed.empty()) << "bpftool perf listed nothing of bpftrace[" << bpftrace << "]";
  std::cout << "bpftool perf: " << listed.dump() << "\n";
  const nlohmann::json report = report_json(data);
  ASSERT_TRUE(report.contains("programs"));
  for (const auto& e : listed) {
    ASSERT_EQ(e["fd_type"], "tracepoint") << e.dump();
    const std::string point = "tracepoint/raw_syscalls/" + e["tracepoint"].get<std::string>();
    bool found = false;
    for (const auto& p : report["programs"]) {
      if (p["id"] != e["prog_id"]) continue;
      found = true;
      std::cout << "report: id " << p["id"] << " " << p["name"] << " attach " << p["attach"]
                << " details " << p["attach_details"].dump() << "\n";
      EXPECT_EQ(p["attach"], point) << p.dump(1);
      ASSERT_EQ(p["attach_details"].size(), 1u) << p.dump(1);
      EXPECT_EQ(p["attach_details"][0]["via"], "task_fd_query");
      EXPECT_EQ(p["attach_details"][0]["by"], "bpftrace[" + std::to_string(bpftrace) + "]");
      std::vector<uint32_t> ids;
      for (const auto& m : p["maps"]) ids.push_back(m["id"].get<uint32_t>());
      EXPECT_EQ(ids, map_ids[e["prog_id"].get<uint32_t>()]) << p.dump(1);
      EXPECT_FALSE(ids.empty()) << "@[comm] = count() needs a map";
    }
    EXPECT_TRUE(found) << "program " << e["prog_id"] << " not in the report";
  }
  expect_unknown_counts_only_unnamed(report);
}

}  // namespace
}  // namespace bpfprof::testing
