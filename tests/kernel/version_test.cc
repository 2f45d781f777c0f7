// SPDX-License-Identifier: Apache-2.0
// Real kernel: a file `bpfprof record` writes says what recorded it — the
// line `bpfprof --version` prints, in perf's VERSION feature — and Linux perf
// reads the file without a word on stderr; `report` shows the line.
#include <gtest/gtest.h>

#include <sstream>
#include <vector>

#include "perfdata/reader.h"
#include "testing/paths.h"
#include "testing/subprocess.h"

namespace bpfprof::testing {
namespace {

const std::string kBpfprof = std::string(BPFPROF_BIN_DIR) + "/bpfprof";

// "bpfprof 0.1.0\ncommit X\nlibbpf 1.1\n..." -> "bpfprof 0.1.0 (commit X; libbpf 1.1, ...)".
// The allocator's line, where there is one, is not in the recording's.
std::string one_line(const std::string& lines) {
  std::istringstream in(lines);
  std::vector<std::string> l;
  for (std::string s; std::getline(in, s);) l.push_back(s);
  if (l.size() == 6 && l[5].starts_with("jemalloc ")) l.pop_back();
  if (l.size() != 5) return "(not five lines: " + lines + ")";
  return l[0] + " (" + l[1] + "; " + l[2] + ", " + l[3] + ", " + l[4] + ")";
}

TEST(VersionKernelTest, RecordingCarriesTheVersionAndPerfReadsIt) {
  TempDir dir;
  const std::string data = dir.file("v.data");
  RunResult rec = run({kBpfprof, "record", "-a", "-d", "0.3", "-q", "-o", data});
  if (rec.exit_code == 2 && rec.err.find("ermission") != std::string::npos) {
    BPFPROF_KERNEL_SKIP("recording refused: " + rec.err);
  }
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  RunResult version = run({kBpfprof, "--version"});
  ASSERT_EQ(version.exit_code, 0);
  const std::string line = one_line(version.out);
  ASSERT_NE(line.find("; libbpf "), std::string::npos) << line;

  auto reader = perfdata::FileReader::open(data);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  EXPECT_EQ(reader->features().version, line);

  RunResult header = run({"perf", "report", "-i", data, "--header-only"});
  EXPECT_EQ(header.exit_code, 0) << header.err;
  EXPECT_EQ(header.err, "");
  EXPECT_NE(header.out.find("\n# perf version : " + line + "\n"), std::string::npos) << header.out;
  RunResult perf_report = run({"perf", "report", "-i", data, "--stdio"});
  EXPECT_EQ(perf_report.exit_code, 0) << perf_report.err;
  EXPECT_EQ(perf_report.err.find("arning"), std::string::npos) << perf_report.err;

  RunResult report = run({kBpfprof, "report", "-q", "-i", data});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("\n# recorded by: " + line + "\n"), std::string::npos) << report.out;
}

}  // namespace
}  // namespace bpfprof::testing
