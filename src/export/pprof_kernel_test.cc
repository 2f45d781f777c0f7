// SPDX-License-Identifier: Apache-2.0
// Real recordings of the BPF workload, end to end:
// - peer: `go tool pprof` reads our pprof of a recording; its total and
//   top flat entries agree with `bpfprof report --format json`, and its raw
//   samples show the BPF labels;
// - merge: two recordings of the same program (ids differ, tags agree) give
//   one function and one mapping;
// - diff: the long-lived program ran twice as long in the second recording.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/recording.h"
#include "export/gzip.h"
#include "export/pprof.h"
#include "proto/profile.pb.h"
#include "testing/paths.h"
#include "testing/subprocess.h"
#include "testing/workload_recording.h"

namespace bpfprof::testing {
namespace {

namespace pb = perftools::profiles;
using nlohmann::json;

const std::string kBin = BPFPROF_BIN_DIR;

// One recording and its JSON report.
struct Recorded : WorkloadRecording {
  json report;
};

struct Fixture {
  Recorded runs[2];  // the long-lived program outlives the others by 1 s, then by 2 s
  TempDir dir;       // what the tests write
};

pb::Profile decode_file(const std::string& path) {
  pb::Profile p;
  auto raw = exporter::gzip_decompress(read_file_text(path));
  EXPECT_TRUE(raw.ok()) << path << ": " << raw.error().to_string();
  if (raw.ok()) {
    EXPECT_TRUE(p.ParseFromString(*raw)) << path;
  }
  return p;
}

// Leaf samples per name, as `go tool pprof -top` groups them.
std::map<std::string, int64_t> report_flat(const json& report) {
  std::map<std::string, int64_t> out;
  for (const auto& s : report["symbols"]) out[s["name"]] += s["samples"].get<int64_t>();
  return out;
}

// pprof prints some C++ names shortened (template arguments, parameters and
// scopes dropped: "hash_table<...>::find_slot_with_hash(...)" becomes
// "hash_table::find_slot_with_hash"); both sides are compared by this key.
std::string short_name(const std::string& name) {
  std::string out;
  int angle = 0, paren = 0;
  for (char c : name) {
    if (c == '<') angle++;
    if (c == '(') paren++;
    if (angle == 0 && paren == 0) out += c;
    if (c == '>' && angle > 0) angle--;
    if (c == ')' && paren > 0) paren--;
  }
  const size_t scope = out.rfind("::");
  return scope == std::string::npos ? out : out.substr(scope + 2);
}

std::map<std::string, int64_t> by_short_name(const std::map<std::string, int64_t>& flat) {
  std::map<std::string, int64_t> out;
  for (const auto& [name, n] : flat) out[short_name(name)] += n;
  return out;
}

class PprofKernelTest : public WorkloadRecordingTest<PprofKernelTest, Fixture> {
 protected:
  static void SetUpTestSuite() {
    g = new Fixture;
    const char* long_lived[] = {"1s", "2s"};
    for (int i = 0; i < 2; i++) {
      Recorded& r = g->runs[i];
      WorkloadRun what;
      what.workload_args = {"--programs", "4", "--lifetime", "50ms", "--long-lived",
                            long_lived[i]};
      if (!r.record_workload(kBin, what)) return;
      RunResult rep = run({kBin + "/bpfprof", "report", "--format", "json", "-i", r.data});
      ASSERT_EQ(rep.exit_code, 0) << rep.err;
      r.report = json::parse(rep.out);
    }
  }
  void SetUp() override {
    WorkloadRecordingTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    for (const Recorded& r : g->runs) {
      ASSERT_FALSE(r.long_lived().is_null()) << r.truth_json.dump();
    }
  }
  static const json& truth0() { return g->runs[0].long_lived(); }
  static std::string burner_ksym() { return truth0()["functions"][0]["ksym"]; }

  // `go tool pprof` without network or the user's caches; empty if go is missing.
  static std::vector<std::string> go_pprof() {
    if (run({"go", "version"}).exit_code != 0) return {};
    const std::string home = g->dir.file("gohome");
    return {"env",          "HOME=" + home,     "GOCACHE=" + home + "/cache",
            "GOPATH=" + home + "/path", "GOFLAGS=-mod=mod", "GOPROXY=off",
            "GOTOOLCHAIN=local", "go", "tool", "pprof"};
  }
  // The pprof of the first recording, written once by the library (what
  // `bpfprof export --format pprof` writes).
  static const std::string& exported() {
    static std::string path;
    if (!path.empty()) return path;
    auto data = analysis::load_recording(g->runs[0].data, analysis::LoadOptions{});
    EXPECT_TRUE(data.ok()) << data.error().to_string();
    if (!data.ok()) return path;
    path = g->dir.file("rec0.pb.gz");
    Status written = exporter::write_pprof(*data, path);
    EXPECT_TRUE(written.ok()) << written.error().to_string();
    return path;
  }
};

#define REQUIRE_GO(cmd)                                                          \
  do {                                                                           \
    if ((cmd).empty()) {                                                         \
      if (std::getenv("CI") != nullptr) FAIL() << "go is not installed in CI";   \
      GTEST_SKIP() << "go not installed (scripts/install-deps.sh installs it)";  \
    }                                                                            \
  } while (0)

TEST_F(PprofKernelTest, GoPprofTopAgreesWithReport) {
  std::vector<std::string> cmd = go_pprof();
  REQUIRE_GO(cmd);
  const std::string file = exported();
  for (const char* a : {"-top", "-sample_index=samples", "-nodefraction=0", "-edgefraction=0"}) {
    cmd.push_back(a);
  }
  cmd.push_back(file);
  RunResult top = run(cmd);
  ASSERT_EQ(top.exit_code, 0) << top.err;
  const json& report = g->runs[0].report;
  const int64_t total = report["samples"];
  EXPECT_NE(top.out.find("of " + std::to_string(total) + " total"), std::string::npos)
      << "report total " << total << "\n" << top.out;

  // Rows after the "flat  flat%" header: flat flat% sum% cum cum% name.
  std::istringstream lines(top.out);
  std::string line;
  bool rows = false;
  std::vector<std::pair<std::string, int64_t>> entries;
  while (std::getline(lines, line)) {
    if (!rows) {
      rows = line.find("flat  flat%") != std::string::npos;
      continue;
    }
    std::istringstream cols(line);
    std::string flat, skip, name;
    cols >> flat >> skip >> skip >> skip >> skip >> std::ws;
    std::getline(cols, name);
    entries.emplace_back(name, std::stoll(flat));
  }
  ASSERT_GE(entries.size(), 3u) << top.out;
  std::map<std::string, int64_t> pprof_flat;
  for (const auto& [name, samples] : entries) pprof_flat[name] += samples;
  const auto ours = by_short_name(report_flat(report));
  const auto theirs = by_short_name(pprof_flat);
  bool burner_seen = false;
  for (size_t i = 0; i < 8 && i < entries.size(); i++) {
    const std::string key = short_name(entries[i].first);
    auto it = ours.find(key);
    ASSERT_NE(it, ours.end()) << "pprof top entry '" << entries[i].first
                              << "' is not in the report\n" << top.out;
    EXPECT_EQ(it->second, theirs.at(key)) << entries[i].first;
    // The long-lived program's hot code (its main function or subprogram).
    for (const auto& f : truth0()["functions"]) {
      burner_seen = burner_seen || entries[i].first == f["ksym"];
    }
  }
  EXPECT_TRUE(burner_seen) << "no long_burner function in pprof's top entries\n" << top.out;
}

TEST_F(PprofKernelTest, GoPprofShowsBpfLabels) {
  std::vector<std::string> cmd = go_pprof();
  REQUIRE_GO(cmd);
  cmd.push_back("-raw");
  cmd.push_back(exported());
  RunResult raw = run(cmd);
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  const std::string id = std::to_string(truth0()["id"].get<int>());
  const std::string tag = truth0()["tag"];
  EXPECT_NE(raw.out.find("bpf_prog_id:[" + id + "]"), std::string::npos) << raw.out.substr(0, 4000);
  EXPECT_NE(raw.out.find("bpf_prog_tag:[" + tag + "]"), std::string::npos);
  EXPECT_NE(raw.out.find("bpf_prog:[long_burner]"), std::string::npos);
  // Who owns it and where it is attached, as the report names them, per
  // instance as the labels are: -a records other tests' long_burner
  // instances too, and the default grouped row joins their owners.
  RunResult rep = run({kBin + "/bpfprof", "report", "--instances", "--format", "json", "-i",
                       g->runs[0].data});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  const json instances = json::parse(rep.out);
  bool in_report = false;
  for (const auto& p : instances["programs"]) {
    if (p["id"] != truth0()["id"]) continue;
    in_report = true;
    const std::string owner = p["owner"], attach = p["attach"];
    EXPECT_NE(raw.out.find("owner:[" + owner + "]"), std::string::npos) << owner;
    EXPECT_NE(raw.out.find("attach:[" + attach + "]"), std::string::npos) << attach;
  }
  EXPECT_TRUE(in_report) << "no long_burner in the report";
  // Not checked here: the "[bpf] long_burner" mapping. pprof merges mappings
  // with equal build id (our tag) and size, and programs of the same code
  // have the same tag whatever their names; ProgramMappingIsItsJitRange
  // checks the file itself.
}

TEST_F(PprofKernelTest, ProgramMappingIsItsJitRange) {
  pb::Profile p = decode_file(exported());
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const auto& f : truth0()["functions"]) {
    lo = std::min(lo, f["addr"].get<uint64_t>());
    hi = std::max(hi, f["addr"].get<uint64_t>() + f["len"].get<uint64_t>());
  }
  // Other instances of long_burner may have run meanwhile (-a records the
  // whole machine): ours is the one at its JIT range.
  int found = 0;
  for (const pb::Mapping& m : p.mapping()) {
    if (p.string_table(static_cast<int>(m.filename())) != "[bpf] long_burner") continue;
    if (m.memory_start() != lo) continue;
    found++;
    EXPECT_EQ(p.string_table(static_cast<int>(m.build_id())), truth0()["tag"]);
    EXPECT_EQ(m.memory_limit(), hi);
  }
  EXPECT_EQ(found, 1) << "no [bpf] long_burner mapping at 0x" << std::hex << lo;
}

// `bpfprof export --format pprof` writes what the library writes: same
// samples, and the program's mapping at its JIT range.
TEST_F(PprofKernelTest, ExportCommandWritesPprof) {
  const std::string out = g->dir.file("export.pb.gz");
  RunResult r = run({kBin + "/bpfprof", "export", "-i", g->runs[0].data, "--format", "pprof", "-o",
                     out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  pb::Profile p = decode_file(out);
  pb::Profile lib = decode_file(exported());
  auto total = [](const pb::Profile& x) {
    int64_t n = 0;
    for (const pb::Sample& s : x.sample()) n += s.value(0);
    return n;
  };
  EXPECT_EQ(total(p), g->runs[0].report["samples"].get<int64_t>());
  EXPECT_EQ(total(p), total(lib));
  const uint64_t lo = truth0()["functions"][0]["addr"];
  int found = 0;
  for (const pb::Mapping& m : p.mapping()) {
    found += p.string_table(static_cast<int>(m.filename())) == "[bpf] long_burner" &&
             m.memory_start() <= lo && lo < m.memory_limit();
  }
  EXPECT_EQ(found, 1);
}

TEST_F(PprofKernelTest, MergeKeysProgramsByTagAndName) {
  const json& t0 = g->runs[0].long_lived();
  const json& t1 = g->runs[1].long_lived();
  ASSERT_NE(t0["id"], t1["id"]);  // two loads, two ids
  ASSERT_EQ(t0["tag"], t1["tag"]);
  const std::string out = g->dir.file("merged.pb.gz");
  RunResult m = run({kBin + "/bpfprof", "merge", "-o", out, g->runs[0].data, g->runs[1].data});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  pb::Profile p = decode_file(out);
  auto s = [&](int64_t i) { return p.string_table(static_cast<int>(i)); };
  int functions = 0, mappings = 0;
  for (const pb::Function& f : p.function()) functions += s(f.name()) == burner_ksym();
  for (const pb::Mapping& mp : p.mapping()) mappings += s(mp.filename()) == "[bpf] long_burner";
  EXPECT_EQ(functions, 1);
  EXPECT_EQ(mappings, 1);
  int64_t total = 0;
  for (const pb::Sample& x : p.sample()) total += x.value(0);
  const int64_t want = g->runs[0].report["samples"].get<int64_t>() +
                       g->runs[1].report["samples"].get<int64_t>();
  EXPECT_EQ(total, want);

  const std::string folded = g->dir.file("merged.folded");
  m = run({kBin + "/bpfprof", "merge", "--format", "folded", "-o", folded, g->runs[0].data,
           g->runs[1].data});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  std::istringstream lines(read_file_text(folded));
  std::string line;
  int64_t folded_total = 0;
  int64_t burner = 0;
  while (std::getline(lines, line)) {
    const size_t sp = line.rfind(' ');
    ASSERT_NE(sp, std::string::npos) << line;
    const int64_t n = std::stoll(line.substr(sp + 1));
    folded_total += n;
    const std::string stack = line.substr(0, sp);
    if (stack.ends_with(burner_ksym() + "_[bpf]")) burner += n;  // leaf last
  }
  EXPECT_EQ(folded_total, want);
  const int64_t burner_want = report_flat(g->runs[0].report)[burner_ksym()] +
                              report_flat(g->runs[1].report)[burner_ksym()];
  EXPECT_EQ(burner, burner_want);
}

TEST_F(PprofKernelTest, DiffSeesTheProgramRunTwiceAsLong) {
  RunResult d =
      run({kBin + "/bpfprof", "diff", "--format", "json", g->runs[0].data, g->runs[1].data});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  json j = json::parse(d.out);
  EXPECT_EQ(j["before"]["samples"], g->runs[0].report["samples"]);
  EXPECT_EQ(j["after"]["samples"], g->runs[1].report["samples"]);
  ASSERT_FALSE(j["programs"].empty()) << d.out;
  const json& top = j["programs"][0];  // sorted by |delta|
  EXPECT_EQ(top["name"], "long_burner") << d.out;
  EXPECT_EQ(top["tag"], truth0()["tag"]);
  const double before = top["before"], after = top["after"];
  ASSERT_GT(before, 0);
  EXPECT_EQ(top["delta"].get<int64_t>(),
            top["after"].get<int64_t>() - top["before"].get<int64_t>());
  // 1 s vs 2 s beyond the short programs' time; CPU shared with other work.
  EXPECT_GT(after / before, 1.3) << d.out;
  EXPECT_LT(after / before, 3.0) << d.out;

  RunResult text = run({kBin + "/bpfprof", "diff", g->runs[0].data, g->runs[1].data});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("long_burner"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(burner_ksym()), std::string::npos) << text.out;
}

}  // namespace
}  // namespace bpfprof::testing
