// SPDX-License-Identifier: Apache-2.0
// The built binary's top level: `bpfprof` alone, `help`, `version`.
#include "cli/app.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "testing/paths.h"
#include "testing/subprocess.h"

namespace bpfprof::cli {
namespace {

using testing::run;
const std::string kBpfprof = std::string(BPFPROF_BIN_DIR) + "/bpfprof";
// The binary's allocator, as jemalloc itself reports it (CMakeLists.txt:
// BPFPROF_JEMALLOC; sanitizer builds use their own, and print no line).
#ifdef BPFPROF_JEMALLOC
const std::string kAllocator = "jemalloc [0-9]+\\.[0-9]+\\.[0-9]+ \\(thp:always\\)\n";
#else
const std::string kAllocator;
#endif

TEST(AppTest, AloneItPrintsEveryCommandOnStderrAndExits2) {
  auto r = run({kBpfprof});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  CommandLine cl = make_command_line();
  const auto subs = cl.app->get_subcommands({});
  ASSERT_EQ(subs.size(), cl.commands.size());
  for (const CLI::App* sub : subs) {
    // "  name   description"
    const size_t at = r.err.find("\n  " + sub->get_name() + " ");
    ASSERT_NE(at, std::string::npos) << sub->get_name() << " in:\n" << r.err;
    std::string line = r.err.substr(at + 3, r.err.find('\n', at + 1) - at - 3);
    EXPECT_EQ(line.substr(line.find_first_not_of(' ', sub->get_name().size())),
              sub->get_description());
  }
}

TEST(AppTest, HelpCommandIsCommandDashDashHelp) {
  CommandLine cl = make_command_line();
  for (const CLI::App* sub : cl.app->get_subcommands({})) {
    auto help = run({kBpfprof, "help", sub->get_name()});
    auto flag = run({kBpfprof, sub->get_name(), "--help"});
    EXPECT_EQ(help.exit_code, 0) << help.err;
    EXPECT_EQ(flag.exit_code, 0) << flag.err;
    EXPECT_EQ(help.out, flag.out) << sub->get_name();
    EXPECT_NE(help.out.find("Usage: bpfprof " + sub->get_name()), std::string::npos) << help.out;
  }
  auto help = run({kBpfprof, "help"});
  auto flag = run({kBpfprof, "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out, flag.out);
}

TEST(AppTest, UnknownCommandsAreRefusedWithTheUsage) {
  for (const auto& argv : {std::vector<std::string>{kBpfprof, "recrod"},
                           std::vector<std::string>{kBpfprof, "help", "recrod"}}) {
    auto r = run(argv);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("'recrod' is not a bpfprof command"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("\n  record "), std::string::npos) << r.err;
  }
}

// One exit-code rule for every command that reads recordings: an input
// bpfprof does not handle (a version-1 perf.data) is refused with 2, a file
// that is not a recording fails with 1; one line on stderr either way.
TEST(AppTest, ReadingCommandsShareOneExitCodeRule) {
  const std::string dir = ::testing::TempDir();
  const std::string old_format = dir + "/v1.data", not_perf = dir + "/not_perf.data";
  {
    std::ofstream(old_format, std::ios::binary) << "PERFFILE" << std::string(120, '\0');
    std::ofstream(not_perf, std::ios::binary) << std::string(128, 'x');
  }
  for (const auto& [file, code] : {std::pair{old_format, 2}, std::pair{not_perf, 1}}) {
    const std::vector<std::vector<std::string>> commands = {
        {"report", "-q", "-i", file},        {"script", "-q", "-i", file},
        {"export", "-q", "-i", file},        {"annotate", "-q", "-i", file, "x"},
        {"merge", "-q", file, file},         {"diff", "-q", file, file}};
    for (std::vector<std::string> argv : commands) {
      const std::string name = argv.front();
      argv.insert(argv.begin(), kBpfprof);
      auto r = run(argv);
      EXPECT_EQ(r.exit_code, code) << name << " " << file << ": " << r.err;
      EXPECT_TRUE(r.err.starts_with("bpfprof " + name + ": ")) << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
  }
}

TEST(AppTest, VersionPrintsTheProjectCommitAndLibrariesOneLineEach) {
  auto flag = run({kBpfprof, "--version"});
  auto cmd = run({kBpfprof, "version"});
  EXPECT_EQ(flag.exit_code, 0);
  EXPECT_EQ(cmd.exit_code, 0);
  EXPECT_EQ(flag.out, cmd.out);
  // The commit is "unknown" only when the tree is not a git checkout.
  const bool git = std::filesystem::exists(std::string(BPFPROF_SOURCE_DIR) + "/.git");
  EXPECT_TRUE(std::regex_match(
      flag.out, std::regex(std::string("bpfprof [0-9]+\\.[0-9]+\\.[0-9]+\n") +
                           (git ? "commit (?!unknown\n)[0-9a-zA-Z.+-]+\n" : "commit unknown\n") +
                           "libbpf [0-9]+\\.[0-9]+\n"
                           "capstone [0-9]+\\.[0-9]+\n"
                           "zstd [0-9]+\\.[0-9]+\\.[0-9]+\n" +
                           kAllocator)))
      << flag.out;
}

}  // namespace
}  // namespace bpfprof::cli
