// SPDX-License-Identifier: Apache-2.0
// Real kernel: what a program costs (docs/cost.md). The workload's --price
// mode runs getppid() in a loop taxed by price_map, a program of 16 hash-map
// updates per call, attached at raw_syscalls:sys_enter as a raw tracepoint,
// through a perf event (tracepoint), twice on one hook (two processes, a
// program each), or not at all with the perf event alone. Recorded by
// `bpfprof record -a` with its default kernel callchains: the map updates are
// the program's callees, the hook's machinery its dispatch (split and marked
// estimated when two programs share the hook), and machinery with no program
// is charged to nobody. Structure only, no shares: the machine is busy.

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "testing/paths.h"
#include "testing/subprocess.h"
#include "testing/workload_recording.h"

namespace bpfprof::testing {
namespace {

const std::string kBin = BPFPROF_BIN_DIR;

struct Case : WorkloadRecording {
  nlohmann::json report;
};

enum PriceRun { kRawTp, kTracepoint, kShared, kPerfOnly, kRuns };

struct Fixture {
  Case runs[kRuns];
  std::string tracefs_refused;  // why the perf-event runs could not be made
};

class CostKernelTest : public WorkloadRecordingTest<CostKernelTest, Fixture> {
 protected:
  static void SetUpTestSuite() {
    g = new Fixture;
    g->tracefs_refused = mount_tracefs();
    const std::vector<std::string> args[kRuns] = {
        {"--price", "raw_tp"},
        {"--price", "tracepoint"},
        {"--price", "raw_tp", "--price-processes", "2"},
        {"--price", "perf_only"},
    };
    for (int r = 0; r < kRuns; r++) {
      Case& c = g->runs[r];
      WorkloadRun what;
      what.record_flags = {"-q", "-a", "-F", "999"};  // kernel callchains by default
      what.truth = false;
      what.workload_args = args[r];
      what.workload_args.insert(what.workload_args.end(), {"--price-ops", "600000"});
      if (!c.record_workload(kBin, what)) return;
      RunResult rep = run({kBin + "/bpfprof", "report", "-q", "-i", c.data, "--format", "json"});
      ASSERT_EQ(rep.exit_code, 0) << rep.err;
      c.report = nlohmann::json::parse(rep.out);
    }
  }

  // The report's price_map rows.
  static std::vector<nlohmann::json> price_rows(PriceRun r) {
    std::vector<nlohmann::json> out;
    for (const auto& p : g->runs[r].report["programs"]) {
      if (p["name"] == "price_map") out.push_back(p);
    }
    return out;
  }
  static uint64_t diagnostic(PriceRun r, const std::string& name) {
    const auto& d = g->runs[r].report["diagnostics"];
    return d.contains(name) ? d[name].get<uint64_t>() : 0;
  }
};

TEST_F(CostKernelTest, MapUpdatesAreTheCallingProgramsCallees) {
  for (PriceRun r : {kRawTp, kTracepoint}) {
    if (r == kTracepoint && !g->tracefs_refused.empty()) continue;
    const std::vector<nlohmann::json> rows = price_rows(r);
    ASSERT_EQ(rows.size(), 1u) << g->runs[r].report.dump(1);
    const nlohmann::json& p = rows[0];
    // Its own code is a few instructions around 16 helper calls.
    EXPECT_GT(p["callee_samples"].get<uint64_t>(), p["self_samples"].get<uint64_t>()) << p.dump(1);
    EXPECT_EQ(p["total_samples"].get<uint64_t>(),
              p["self_samples"].get<uint64_t>() + p["callee_samples"].get<uint64_t>() +
                  p["dispatch_samples"].get<uint64_t>());
    EXPECT_EQ(p["samples"], p["self_samples"]);
  }
}

TEST_F(CostKernelTest, HookMachineryIsThePriceOfTheProgramAttachedThere) {
  const std::vector<nlohmann::json> raw = price_rows(kRawTp);
  ASSERT_EQ(raw.size(), 1u);
  EXPECT_EQ(raw[0]["attach"], "raw_tp/sys_enter");
  EXPECT_GT(raw[0]["dispatch_samples"].get<uint64_t>(), 0u) << raw[0].dump(1);
  // Nothing else is attached at raw_tp/sys_enter. Only the recorder's own
  // capture program (syscalls:sys_exit_bpf) shares its
  // machinery: any syscall tracepoint puts every task on the syscall slow
  // path (syscall_trace_enter), so that part is split with them, estimated.
  // Programs of other processes run elsewhere (BPF_PROG_TEST_RUN, another
  // hook) have machinery of their own, not this hook's.
  for (const auto& p : g->runs[kRawTp].report["programs"]) {
    if (p["name"] == "price_map" || p["dispatch_samples"].get<uint64_t>() == 0) continue;
    const std::string attach = p["attach"].get<std::string>();
    if (!attach.starts_with("raw_tp/") && !attach.starts_with("tracepoint/")) continue;
    EXPECT_EQ(p["name"], "capture_exit") << p.dump(1);
    EXPECT_TRUE(raw[0]["dispatch_estimated"].get<bool>()) << raw[0].dump(1);
  }
  if (!g->tracefs_refused.empty()) {
    GTEST_SKIP() << "the perf-event tracepoint: " << g->tracefs_refused;
  }
  const std::vector<nlohmann::json> tp = price_rows(kTracepoint);
  ASSERT_EQ(tp.size(), 1u);
  EXPECT_EQ(tp[0]["attach"], "tracepoint/raw_syscalls/sys_enter");
  EXPECT_GT(tp[0]["dispatch_samples"].get<uint64_t>(), 0u) << tp[0].dump(1);
}

TEST_F(CostKernelTest, TwoProgramsOnOneHookSplitItsMachineryAsAnEstimate) {
  const std::vector<nlohmann::json> rows = price_rows(kShared);
  // Each process's program filters its own tgid into its code: two codes.
  ASSERT_EQ(rows.size(), 2u) << g->runs[kShared].report.dump(1);
  uint64_t dispatch = 0;
  for (const nlohmann::json& p : rows) {
    EXPECT_TRUE(p["dispatch_estimated"].get<bool>()) << p.dump(1);
    EXPECT_GT(p["callee_samples"].get<uint64_t>(), 0u) << p.dump(1);
    dispatch += p["dispatch_samples"].get<uint64_t>();
  }
  EXPECT_GT(dispatch, 0u);
}

TEST_F(CostKernelTest, MachineryWithNoProgramIsChargedToNobody) {
  if (!g->tracefs_refused.empty()) GTEST_SKIP() << g->tracefs_refused;
  EXPECT_TRUE(price_rows(kPerfOnly).empty());
  // The perf tracepoint path ran for every getppid(), and no program was
  // there to pay for it: counted, not guessed.
  EXPECT_GT(diagnostic(kPerfOnly, "bpf_dispatch_unattributed"), 0u)
      << g->runs[kPerfOnly].report["diagnostics"].dump(1);
  for (const auto& p : g->runs[kPerfOnly].report["programs"]) {
    EXPECT_NE(p["attach"], "tracepoint/raw_syscalls/sys_enter") << p.dump(1);
  }
  // In every run, dispatch goes only to programs attached somewhere known.
  for (const Case& c : g->runs) {
    for (const auto& p : c.report["programs"]) {
      if (p["dispatch_samples"].get<uint64_t>() == 0) continue;
      EXPECT_FALSE(p["attach_points"].empty()) << p.dump(1);
    }
  }
}

TEST_F(CostKernelTest, AnnotateShowsWhereTheCalleesArePaid) {
  const std::vector<nlohmann::json> rows = price_rows(kRawTp);
  ASSERT_EQ(rows.size(), 1u);
  RunResult r = run({kBin + "/bpfprof", "annotate", "-q", "-i", g->runs[kRawTp].data, "--format",
                     "json", "price_map"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json a = nlohmann::json::parse(r.out);
  ASSERT_EQ(a["programs"].size(), 1u);
  const nlohmann::json& listing = a["programs"][0];
  // The same samples report calls its callees, each at the call it came from.
  EXPECT_EQ(listing["callee_samples"], rows[0]["callee_samples"]);
  uint64_t at_calls = 0, map_calls = 0;
  for (const auto& f : listing["functions"]) {
    for (const auto& line : f["lines"]) {
      for (const auto& insn : line["insns"]) {
        const uint64_t n = insn["callee_samples"].get<uint64_t>();
        at_calls += n;
        if (n > 0) {
          EXPECT_FALSE(insn["target"].is_null()) << insn.dump();
        }
        if (insn["target"].is_string() &&
            insn["target"].get<std::string>().find("map_update_elem") != std::string::npos) {
          map_calls++;
        }
      }
    }
  }
  // Each at the call it returns to, but for an interrupt taken inside the
  // program (its frame is the interrupted instruction, after no call).
  const uint64_t not_at_call = listing["callee_samples_not_at_call"].get<uint64_t>();
  EXPECT_EQ(at_calls + not_at_call, listing["callee_samples"].get<uint64_t>());
  EXPECT_LE(not_at_call * 100, listing["callee_samples"].get<uint64_t>())
      << "over 1% not at a call";
  EXPECT_EQ(map_calls, 16u) << "price_map's 16 bpf_map_update_elem calls, named";
}

}  // namespace
}  // namespace bpfprof::testing
