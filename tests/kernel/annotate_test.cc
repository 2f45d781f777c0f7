// SPDX-License-Identifier: Apache-2.0
// Real kernel, end to end: record the BPF workload, then `bpfprof annotate`
// the long-lived program from the file. Its hottest source line is the
// truth's hot line, the disassembly covers every JIT'd function byte for
// byte, and its per-line totals equal `report --bpf-only --sort prog,line`.
// The recording is system-wide, so other processes' programs of the same
// name may be in it: the checks select the workload's instance by id and its
// samples in `report` by pid.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>

#include "testing/paths.h"
#include "testing/subprocess.h"
#include "testing/workload_recording.h"

namespace bpfprof::testing {
namespace {

const std::string kBin = BPFPROF_BIN_DIR;
using Json = nlohmann::json;

class AnnotateKernelTest : public WorkloadRecordingTest<AnnotateKernelTest> {
 protected:
  static void SetUpTestSuite() {
    g = new WorkloadRecording;
    g->record_workload(
        kBin, {.record_flags = {"-a", "-F", "4999"},
               .workload_args = {"--programs", "4", "--lifetime", "50ms", "--long-lived", "1s"}});
  }
  static std::string long_lived_id() {
    return std::to_string(g->long_lived()["id"].get<uint32_t>());
  }
  // `bpfprof annotate --format json` of `query`; fails the test on error.
  static Json annotate(const std::string& query) {
    RunResult r = run({kBin + "/bpfprof", "annotate", "-i", g->data, query, "--format", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    Json j = Json::parse(r.out, nullptr, false);
    EXPECT_TRUE(j.is_object()) << r.out;
    return j;
  }
};

// "file:line" (or "[unknown]", as report names samples without a line) ->
// samples, over every function of the program.
std::map<std::string, uint64_t> line_totals(const Json& program) {
  std::map<std::string, uint64_t> out;
  for (const auto& f : program["functions"]) {
    for (const auto& t : f["line_totals"]) {
      const std::string key = t["line"].is_null() ? "[unknown]"
                                                  : t["file"].get<std::string>() + ":" +
                                                        std::to_string(t["line"].get<int>());
      if (t["samples"].get<uint64_t>() > 0) out[key] += t["samples"].get<uint64_t>();
    }
  }
  return out;
}

TEST_F(AnnotateKernelTest, HottestLineIsTheTruthsHotLine) {
  Json j = annotate(long_lived_id());
  ASSERT_EQ(j["programs"].size(), 1u) << j.dump();
  const Json& p = j["programs"][0];
  EXPECT_EQ(p["tag"], g->long_lived()["tag"]);
  ASSERT_GT(p["samples"].get<uint64_t>(), 0u);
  EXPECT_TRUE(p["has_lines"].get<bool>());
  auto totals = line_totals(p);
  ASSERT_FALSE(totals.empty());
  auto hottest = std::max_element(totals.begin(), totals.end(),
                                  [](const auto& a, const auto& b) { return a.second < b.second; });
  const Json& hot = g->long_lived()["hot_line"];
  EXPECT_EQ(hottest->first,
            hot["file"].get<std::string>() + ":" + std::to_string(hot["line"].get<int>()))
      << p.dump();
}

TEST_F(AnnotateKernelTest, DisassemblyCoversEveryFunction) {
  Json j = annotate(long_lived_id());
  ASSERT_EQ(j["programs"].size(), 1u);
  const Json& p = j["programs"][0];
  std::map<std::string, uint32_t> got;
  for (const auto& f : p["functions"]) {
    uint64_t size = 0;
    uint64_t next = 0;
    for (const auto& l : f["lines"]) {
      for (const auto& i : l["insns"]) {
        EXPECT_EQ(i["offset"].get<uint64_t>(), next) << f["name"];  // no gap, no overlap
        next = i["offset"].get<uint64_t>() + i["size"].get<uint64_t>();
        size += i["size"].get<uint64_t>();
      }
    }
    EXPECT_EQ(size, f["len"].get<uint64_t>()) << f["name"];
    got[f["name"]] = f["len"];
  }
  const Json& truth = g->long_lived();
  EXPECT_EQ(got.size(), truth["functions"].size());
  for (const auto& f : truth["functions"]) {
    auto it = got.find(f["ksym"].get<std::string>());
    ASSERT_NE(it, got.end()) << f["ksym"] << " missing";
    EXPECT_EQ(it->second, f["len"].get<uint32_t>()) << f["ksym"];
  }
}

TEST_F(AnnotateKernelTest, LineTotalsEqualReportByProgAndLine) {
  Json j = annotate(long_lived_id());
  ASSERT_EQ(j["programs"].size(), 1u);
  EXPECT_EQ(j["programs"][0]["samples_outside"], 0);
  // `pid` only separates the workload's samples from other processes' runs
  // of a program with the same name; it does not change the lines.
  RunResult r = run({kBin + "/bpfprof", "report", "-i", g->data, "--bpf-only", "--sort",
                     "prog,pid,line", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json report = Json::parse(r.out);
  const std::string pid = std::to_string(g->truth_json["pid"].get<uint32_t>()) + ":";
  std::map<std::string, uint64_t> expected;
  for (const auto& e : report["entries"]) {
    if (e["prog"] != "long_burner" || !e["pid"].get<std::string>().starts_with(pid)) continue;
    // Annotate shows the program's own code: not what it calls or its hook.
    if (e["line"] == "[callees]" || e["line"] == "[dispatch]") continue;
    expected[e["line"]] += e["samples"].get<uint64_t>();
  }
  ASSERT_FALSE(expected.empty()) << r.out;
  EXPECT_EQ(line_totals(j["programs"][0]), expected);
}

TEST_F(AnnotateKernelTest, IdSelectsOneInstanceAndNameAllOfThem) {
  const Json& truth = g->long_lived();
  Json by_id = annotate(std::to_string(truth["id"].get<uint32_t>()));
  EXPECT_EQ(by_id["selected_by"], "id");
  ASSERT_EQ(by_id["programs"].size(), 1u);
  EXPECT_EQ(by_id["programs"][0]["ids"], Json::array({truth["id"]}));

  std::set<uint32_t> burners;
  for (const auto& p : g->truth_json["programs"]) {
    if (p["name"] == "burner") burners.insert(p["id"].get<uint32_t>());
  }
  Json by_name = annotate("burner");
  std::set<uint32_t> ids;
  for (const auto& p : by_name["programs"]) {
    for (const auto& id : p["ids"]) ids.insert(id.get<uint32_t>());
  }
  // Every burner the workload loaded (other processes' may come on top).
  EXPECT_TRUE(std::includes(ids.begin(), ids.end(), burners.begin(), burners.end()));
  EXPECT_EQ(by_name["selected_by"], "name");
}

TEST_F(AnnotateKernelTest, UnknownNameListsTheClosest) {
  RunResult r = run({kBin + "/bpfprof", "annotate", "-i", g->data, "long_burnr"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("long_burner"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST_F(AnnotateKernelTest, TextListingShowsLinesAndInstructions) {
  RunResult r = run({kBin + "/bpfprof", "annotate", "-i", g->data, long_lived_id()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json& hot = g->long_lived()["hot_line"];
  EXPECT_NE(r.out.find(":" + std::to_string(hot["line"].get<int>())), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("HOT LINE"), std::string::npos) << "BTF carries the line's text";
  EXPECT_EQ(r.out.find('\033'), std::string::npos) << "no colour when stdout is not a terminal";
}

}  // namespace
}  // namespace bpfprof::testing
