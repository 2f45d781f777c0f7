// SPDX-License-Identifier: Apache-2.0
// The progress line of the commands that read recordings: drawn on stderr
// only when stderr is a terminal, never with -q, erased before the output,
// which stays byte for byte what a run without a terminal prints. The
// recordings here are read in milliseconds, so the tests set the hidden
// BPFPROF_PROGRESS_AFTER_MS=0 (a line is then drawn at once) except the one
// that checks that a short run prints nothing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

#include "testing/paths.h"
#include "testing/subprocess.h"

namespace bpfprof::testing {
namespace {

const std::string kBin = BPFPROF_BIN_DIR;
const std::string kInput = std::string(BPFPROF_GOLDEN_DIR) + "/bpf_lifecycle/perf.data";
const std::string kErase = "\r\x1b[K";

struct Command {
  const char* name;
  std::vector<std::string> args;  // "@" stands for the input recording
};

const Command kCommands[] = {
    {"report", {"report", "-i", "@"}},
    {"report_g_json", {"report", "-g", "--format", "json", "-i", "@"}},
    {"script", {"script", "-i", "@"}},
    {"export", {"export", "-i", "@"}},
    {"export_time", {"export", "--format", "json", "--time", "0,", "-i", "@"}},
    {"merge", {"merge", "--format", "folded", "@", "@"}},
    {"diff", {"diff", "@", "@"}},
};

// Test names and failure messages show the command's name, not its bytes.
void PrintTo(const Command& c, std::ostream* os) { *os << c.name; }

std::vector<std::string> argv_of(const Command& c, bool quiet = false) {
  std::vector<std::string> argv{kBin + "/bpfprof"};
  for (const std::string& a : c.args) argv.push_back(a == "@" ? kInput : a);
  if (quiet) argv.push_back("-q");
  return argv;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

class ProgressTest : public ::testing::TestWithParam<Command> {
 protected:
  void SetUp() override { setenv("BPFPROF_PROGRESS_AFTER_MS", "0", 1); }
  void TearDown() override { unsetenv("BPFPROF_PROGRESS_AFTER_MS"); }
};

TEST_P(ProgressTest, StderrPipeGetsNoProgress) {
  RunResult r = run(argv_of(GetParam()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(r.out.empty());
  EXPECT_EQ(r.err, "");
}

TEST_P(ProgressTest, StderrTtyGetsALineErasedAtTheEnd) {
  RunResult plain = run(argv_of(GetParam()));
  RunResult tty = run_on_tty(argv_of(GetParam()));
  ASSERT_EQ(tty.exit_code, 0) << tty.err;
  EXPECT_EQ(tty.out, plain.out);  // the output does not change
  EXPECT_EQ(tty.err.rfind("\r[ reading ", 0), 0u) << tty.err;
  EXPECT_NE(tty.err.find(kInput), std::string::npos) << tty.err;
  EXPECT_TRUE(ends_with(tty.err, "\x1b[K" + kErase)) << tty.err;  // last line, then erased
  EXPECT_EQ(tty.err.find('\n'), std::string::npos) << tty.err;    // redrawn in place
}

TEST_P(ProgressTest, QuietTtyGetsNothing) {
  RunResult plain = run(argv_of(GetParam()));
  RunResult tty = run_on_tty(argv_of(GetParam(), /*quiet=*/true));
  ASSERT_EQ(tty.exit_code, 0) << tty.err;
  EXPECT_EQ(tty.out, plain.out);
  EXPECT_EQ(tty.err, "");
}

INSTANTIATE_TEST_SUITE_P(Commands, ProgressTest, ::testing::ValuesIn(kCommands),
                         [](const ::testing::TestParamInfo<Command>& info) {
                           return std::string(info.param.name);
                         });

// One terminal for both streams, as at a shell prompt: the line is gone
// before the first byte of the report.
TEST(ProgressTtyTest, ErasedBeforeTheReportOnTheSameTerminal) {
  setenv("BPFPROF_PROGRESS_AFTER_MS", "0", 1);
  const std::vector<std::string> argv = argv_of(kCommands[0]);
  RunResult plain = run(argv);
  RunResult tty = run_on_tty(argv, /*stdout_on_tty=*/true);
  unsetenv("BPFPROF_PROGRESS_AFTER_MS");
  ASSERT_EQ(tty.exit_code, 0) << tty.err;
  ASSERT_FALSE(plain.out.empty());
  ASSERT_TRUE(ends_with(tty.err, plain.out)) << tty.err;
  const std::string progress = tty.err.substr(0, tty.err.size() - plain.out.size());
  EXPECT_EQ(progress.rfind("\r[ reading ", 0), 0u) << progress;
  EXPECT_TRUE(ends_with(progress, kErase)) << progress;
}

// Without the override a run shorter than half a second prints nothing: no
// flicker for small files.
TEST(ProgressTtyTest, ShortRunOnTtyPrintsNothing) {
  unsetenv("BPFPROF_PROGRESS_AFTER_MS");
  RunResult tty = run_on_tty(argv_of(kCommands[0]));
  ASSERT_EQ(tty.exit_code, 0) << tty.err;
  EXPECT_FALSE(tty.out.empty());
  EXPECT_EQ(tty.err, "");
}

}  // namespace
}  // namespace bpfprof::testing
