// SPDX-License-Identifier: Apache-2.0
// Real kernel, end to end: record the BPF workload with `bpfprof record -a -g`,
// then `bpfprof report` names the long-lived program with samples, groups
// instances of the same code, attributes its hot line, and `bpfprof script`
// prints as many samples as `perf script`.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "report/program_groups.h"
#include "testing/paths.h"
#include "testing/subprocess.h"
#include "testing/workload_recording.h"

namespace bpfprof::testing {
namespace {

const std::string kBin = BPFPROF_BIN_DIR;

class ReportKernelTest : public WorkloadRecordingTest<ReportKernelTest> {
 protected:
  static void SetUpTestSuite() {
    g = new WorkloadRecording;
    g->record_workload(
        kBin, {.workload_args = {"--programs", "6", "--lifetime", "50ms", "--long-lived", "1s"}});
  }
};

TEST_F(ReportKernelTest, LongLivedProgramHasSamplesAndItsName) {
  const nlohmann::json& truth = g->long_lived();
  ASSERT_TRUE(truth.is_object()) << g->truth_json.dump();
  RunResult r =
      run({kBin + "/bpfprof", "report", "--instances", "--format", "json", "-i", g->data});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["samples"].get<uint64_t>(), 0u);
  const nlohmann::json* found = nullptr;
  for (const auto& p : j["programs"]) {
    if (p["id"] == truth["id"]) found = &p;
  }
  ASSERT_NE(found, nullptr) << "program id " << truth["id"] << " missing from the report";
  EXPECT_EQ((*found)["name"], "long_burner");
  EXPECT_EQ((*found)["kernel_name"], "long_burner");  // short enough not to be cut
  EXPECT_EQ((*found)["tag"], truth["tag"]);
  EXPECT_GT((*found)["samples"].get<uint64_t>(), 0u);
  // Its functions are the ones the kernel JIT'd, named as kallsyms names them.
  std::vector<std::string> names;
  for (const auto& f : (*found)["functions"]) names.push_back(f["name"]);
  for (const auto& f : truth["functions"]) {
    EXPECT_NE(std::find(names.begin(), names.end(), f["ksym"].get<std::string>()), names.end())
        << f["ksym"];
  }
  // Every short-lived program of the truth is in the table too, with its id.
  for (const auto& p : g->truth_json["programs"]) {
    bool listed = false;
    for (const auto& q : j["programs"]) listed = listed || q["id"] == p["id"];
    EXPECT_TRUE(listed) << p["name"] << " id " << p["id"];
  }
  EXPECT_TRUE(j["diagnostics"].is_object());
}

// The default table: instances of the same code (name and tag) in one row,
// with every instance's id and their samples summed; `--instances` lists the
// same programs one by one. The workload loads `burner` several times.
TEST_F(ReportKernelTest, ProgramTableGroupsInstancesOfTheSameCode) {
  using Code = std::pair<std::string, std::string>;  // name, tag
  std::map<Code, std::set<uint32_t>> truth;
  for (const auto& p : g->truth_json["programs"]) {
    truth[{p["name"], p["tag"]}].insert(p["id"].get<uint32_t>());
  }
  ASSERT_LT(truth.size(), g->truth_json["programs"].size()) << "no code loaded twice";
  RunResult grouped = run({kBin + "/bpfprof", "report", "--format", "json", "-i", g->data});
  RunResult each =
      run({kBin + "/bpfprof", "report", "--instances", "--format", "json", "-i", g->data});
  ASSERT_EQ(grouped.exit_code, 0) << grouped.err;
  ASSERT_EQ(each.exit_code, 0) << each.err;
  const auto rows = nlohmann::json::parse(grouped.out)["programs"];
  const auto instances = nlohmann::json::parse(each.out)["programs"];
  // Code -> ids and summed samples of the instance rows.
  std::map<Code, std::pair<std::set<uint32_t>, uint64_t>> want;
  for (const auto& p : instances) {
    auto& w = want[{p["name"], p["tag"]}];
    w.first.insert(p["id"].get<uint32_t>());
    w.second += p["samples"].get<uint64_t>();
  }
  ASSERT_EQ(rows.size(), want.size()) << grouped.out;
  for (const auto& row : rows) {
    const Code code{row["name"], row["tag"]};
    const auto ids = row["ids"].get<std::set<uint32_t>>();
    EXPECT_EQ(row["instances"].get<size_t>(), row["ids"].size());
    EXPECT_EQ(ids, want[code].first) << code.first;
    EXPECT_EQ(row["samples"].get<uint64_t>(), want[code].second) << code.first;
    // Every workload program of this code is in this row.
    if (auto t = truth.find(code); t != truth.end()) {
      EXPECT_TRUE(std::includes(ids.begin(), ids.end(), t->second.begin(), t->second.end()))
          << code.first << " " << row["ids"];
    }
  }
  for (const auto& [code, ids] : truth) EXPECT_TRUE(want.contains(code)) << code.first;
  // The text table: the burners' row says how many instances and which ids.
  RunResult text = run({kBin + "/bpfprof", "report", "-i", g->data});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  // Cells are padded to the widest in their column: compared with every run
  // of spaces as one.
  std::string table;
  for (char c : text.out) {
    if (c != ' ' || table.empty() || table.back() != ' ') table += c;
  }
  for (const auto& [code, ids] : truth) {
    if (code.first != "burner") continue;
    const std::set<uint32_t>& all = want[code].first;
    // Ids as the table writes them (id_list's own test: render_test.cc).
    const std::vector<uint32_t> sorted(all.begin(), all.end());
    const std::string cells = " " + std::to_string(all.size()) + " " +
                              report::id_list(sorted, 24) + " " + code.second + " ";
    EXPECT_NE(table.find(cells), std::string::npos) << cells << "\n" << text.out;
  }
}

TEST_F(ReportKernelTest, HotLineLeadsTheLongLivedProgram) {
  const nlohmann::json& truth = g->long_lived();
  ASSERT_TRUE(truth.is_object());
  RunResult r = run({kBin + "/bpfprof", "report", "--format", "json", "--bpf-only", "--sort",
                     "prog,line", "-i", g->data});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  const std::string hot = truth["hot_line"]["file"].get<std::string>() + ":" +
                          std::to_string(truth["hot_line"]["line"].get<int>());
  for (const auto& e : j["entries"]) {
    if (e["prog"] != "long_burner") continue;
    EXPECT_EQ(e["line"], hot) << r.out;  // entries are sorted by samples
    return;
  }
  ADD_FAILURE() << "no long_burner entry: " << r.out;
}

TEST_F(ReportKernelTest, ScriptPrintsAsManySamplesAsPerf) {
  RunResult ours = run({kBin + "/bpfprof", "script", "-G", "-i", g->data});  // one line a sample
  ASSERT_EQ(ours.exit_code, 0) << ours.err;
  RunResult perf = run({"perf", "script", "-F", "tid,time", "-i", g->data});
  if (perf.exit_code == 127 || perf.exit_code < 0) GTEST_SKIP() << "perf not installed";
  ASSERT_EQ(perf.exit_code, 0) << perf.err;
  auto lines = [](const std::string& s) { return std::count(s.begin(), s.end(), '\n'); };
  EXPECT_GT(lines(ours.out), 0);
  EXPECT_EQ(lines(ours.out), lines(perf.out));
}

}  // namespace
}  // namespace bpfprof::testing
