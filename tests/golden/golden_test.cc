// SPDX-License-Identifier: Apache-2.0
// Golden tests: runs the built bpfprof on the recordings under tests/golden/
// and compares with the expected outputs next to them. On a mismatch the
// output is written to <expected>.actual and a unified diff is printed;
// BPFPROF_UPDATE_GOLDEN=1 rewrites the expectations instead (review the diff).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "testing/paths.h"
#include "testing/subprocess.h"

namespace bpfprof::testing {
namespace {

const std::string kBin = BPFPROF_BIN_DIR;
const std::string kGolden = BPFPROF_GOLDEN_DIR;

// One expected file: the case folder, its name, and the bpfprof arguments
// that produce it (the input is added as `-i <case>/perf.data`). The README
// here lists the same table.
struct GoldenFile {
  const char* case_name;
  const char* expected;
  std::vector<std::string> args;
};

const GoldenFile kFiles[] = {
    {"bpf_lifecycle", "report.txt", {"report"}},
    {"bpf_lifecycle", "report.json", {"report", "--format", "json"}},
    {"bpf_lifecycle", "report-g.txt", {"report", "-g"}},
    {"bpf_lifecycle", "report-prog-comm.txt", {"report", "--bpf-only", "--sort", "prog,comm"}},
    {"bpf_lifecycle", "report-instances.txt", {"report", "--instances"}},
    {"bpf_lifecycle", "report-v.txt", {"report", "-v"}},
    {"bpf_lifecycle", "script.txt", {"script"}},  // with callchains: perf script's layout
    {"bpf_lifecycle", "script-G.txt", {"script", "-G"}},
    {"bpf_lifecycle", "script.jsonl", {"script", "--format", "json"}},
    {"degraded", "report.txt", {"report"}},
    {"degraded", "report.json", {"report", "--format", "json"}},
    {"degraded", "script.txt", {"script"}},
    {"degraded", "report-kallsyms.txt", {"report", "--kallsyms", "{dir}/kallsyms"}},
};

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

class GoldenTest : public ::testing::TestWithParam<GoldenFile> {};

TEST_P(GoldenTest, MatchesExpected) {
  const GoldenFile& g = GetParam();
  const std::string dir = kGolden + "/" + g.case_name;
  std::vector<std::string> argv{kBin + "/bpfprof"};
  for (std::string a : g.args) {
    if (a.starts_with("{dir}")) a = dir + a.substr(5);  // a file of the case
    argv.push_back(std::move(a));
  }
  argv.insert(argv.end(), {"-i", dir + "/perf.data", "-j", "2"});
  RunResult r = run(argv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // A case's own files are named in the output as {dir}/name, wherever the
  // checkout is.
  for (size_t at; (at = r.out.find(dir)) != std::string::npos;) r.out.replace(at, dir.size(), "{dir}");
  const std::string expected_path = dir + "/" + g.expected;
  const char* update = std::getenv("BPFPROF_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    write_file(expected_path, r.out);
    std::remove((expected_path + ".actual").c_str());
    return;
  }
  const std::string expected = read_file_text(expected_path);
  if (expected == r.out) {
    std::remove((expected_path + ".actual").c_str());
    return;
  }
  write_file(expected_path + ".actual", r.out);
  RunResult diff = run({"diff", "-u", expected_path, expected_path + ".actual"});
  ADD_FAILURE() << expected_path << " differs (BPFPROF_UPDATE_GOLDEN=1 rewrites it):\n"
                << diff.out;
}

INSTANTIATE_TEST_SUITE_P(Files, GoldenTest, ::testing::ValuesIn(kFiles),
                         [](const ::testing::TestParamInfo<GoldenFile>& info) {
                           std::string name = std::string(info.param.case_name) + "_" +
                                              info.param.expected;
                           for (char& c : name) {
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

// The committed recordings are exactly what the generator writes, so the
// generator is their provenance and can be edited to add cases.
TEST(GoldenData, GeneratorReproducesCommittedFiles) {
  TempDir tmp;
  for (const char* c : {"bpf_lifecycle", "degraded"}) {
    ASSERT_EQ(run({"mkdir", "-p", tmp.file(c)}).exit_code, 0);
  }
  RunResult gen = run({BPFPROF_GOLDEN_GEN, tmp.path()});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  for (const char* c : {"bpf_lifecycle", "degraded"}) {
    EXPECT_EQ(read_file_text(tmp.file(std::string(c) + "/perf.data")),
              read_file_text(kGolden + "/" + c + "/perf.data"))
        << c << "/perf.data is not what the generator writes; regenerate with "
        << "bpfprof_golden_gen " << kGolden;
  }
}

// Pass 2 splits samples across threads and merges: any split gives the same report.
TEST(GoldenData, ThreadCountDoesNotChangeOutput) {
  const std::string in = kGolden + "/bpf_lifecycle/perf.data";
  RunResult one = run({kBin + "/bpfprof", "report", "-g", "--format", "json", "-j", "1", "-i", in});
  RunResult many = run({kBin + "/bpfprof", "report", "-g", "--format", "json", "-j", "7", "-i", in});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, many.out);
  RunResult s1 = run({kBin + "/bpfprof", "script", "-j", "1", "-i", in});
  RunResult s5 = run({kBin + "/bpfprof", "script", "-j", "5", "-i", in});
  EXPECT_EQ(s1.out, s5.out);
}

// A corrupt file: exit code 1 and one line naming the byte offset.
TEST(GoldenErrors, CorruptInputIsOneLineWithOffset) {
  TempDir tmp;
  std::string bytes = read_file_text(kGolden + "/bpf_lifecycle/perf.data");
  ASSERT_GT(bytes.size(), 400u);
  // The first record's header.size in the data section (data offset is at byte 40).
  uint64_t data_offset = 0;
  std::memcpy(&data_offset, bytes.data() + 40, 8);
  bytes[data_offset + 6] = 3;  // size 3 < header size
  bytes[data_offset + 7] = 0;
  write_file(tmp.file("bad.data"), bytes);
  RunResult r = run({kBin + "/bpfprof", "report", "-i", tmp.file("bad.data")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("byte offset"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  RunResult missing = run({kBin + "/bpfprof", "script", "-i", tmp.file("none.data")});
  EXPECT_EQ(missing.exit_code, 1) << missing.err;
  RunResult bad_key = run({kBin + "/bpfprof", "report", "--sort", "cpu", "-i", tmp.file("bad.data")});
  EXPECT_EQ(bad_key.exit_code, 2);
  EXPECT_NE(bad_key.err.find("valid keys: prog, sym, dso, comm, pid, line, cgroup, container, owner"), std::string::npos);
}

// A recording with losses (degraded: a record of an unknown type, a sample
// of an unknown id) makes every command that read it say so once on stderr,
// after its output, which stays the same; -q keeps stderr empty. A recording
// without losses (bpf_lifecycle: unnamed frames only) gets no line.
TEST(GoldenWarnings, LossesAreOneStderrLineUnlessQuiet) {
  const std::string clean = kGolden + "/bpf_lifecycle/perf.data";
  const std::string lossy = kGolden + "/degraded/perf.data";
  const std::string losses =
      ": 1 records_unknown_attr, 1 records_unknown_type: part of the recording could not be used "
      "(see the diagnostics of bpfprof report)\n";
  const std::vector<std::vector<std::string>> commands = {
      {"report", "-i", lossy},
      {"report", "--format", "json", "-i", lossy},
      {"script", "-i", lossy},
      {"export", "-i", lossy},
      {"merge", "--format", "folded", clean, lossy},
      {"diff", clean, lossy},
  };
  for (std::vector<std::string> argv : commands) {
    const std::string command = argv.front();
    argv.insert(argv.begin(), kBin + "/bpfprof");
    RunResult r = run(argv);
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.err;
    EXPECT_EQ(r.err, "bpfprof " + command + ": warning: " + lossy + losses) << command;
    argv.push_back("-q");
    RunResult quiet = run(argv);
    EXPECT_EQ(quiet.exit_code, 0) << command << ": " << quiet.err;
    EXPECT_EQ(quiet.err, "") << command;
    EXPECT_EQ(quiet.out, r.out) << command;
  }
  RunResult none = run({kBin + "/bpfprof", "report", "-i", clean});
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.err, "");
}

// The CI gate: exit 3 with the offenders on stderr when a program's share
// grows by more than the limit, 0 when none does.
TEST(GoldenExitCodes, DiffFailAboveExitsThree) {
  const std::string before = kGolden + "/bpf_lifecycle/perf.data";
  const std::string after = kGolden + "/degraded/perf.data";
  RunResult over = run({kBin + "/bpfprof", "diff", "-q", before, after, "--fail-above", "10"});
  EXPECT_EQ(over.exit_code, 3) << over.err;
  EXPECT_EQ(over.err, "bpfprof diff: over the limit: nameless_info (by name): share 0.00% -> "
                      "60.00% (+60.00 points)\n");
  EXPECT_NE(over.out.find("# Gate: --fail-above 10 (points of share); 1 offender\n"),
            std::string::npos);
  RunResult under = run({kBin + "/bpfprof", "diff", "-q", before, after, "--fail-above", "61"});
  EXPECT_EQ(under.exit_code, 0) << under.err;
  EXPECT_EQ(under.err, "");
  RunResult same = run({kBin + "/bpfprof", "diff", "-q", before, before, "--fail-above", "0",
                        "--fail-above-ns", "0"});
  EXPECT_EQ(same.exit_code, 0) << same.err;
}

}  // namespace
}  // namespace bpfprof::testing
