// SPDX-License-Identifier: Apache-2.0
#include "cli/record_command.h"

#include <gtest/gtest.h>

#include <optional>

namespace bpfprof::cli {
namespace {

// Parses `args` (after "bpfprof") the way main() does.
class RecordCommandTest : public ::testing::Test {
 protected:
  Result<record::RecordOptions> parse(std::vector<std::string> args) {
    args.insert(args.begin(), "bpfprof");
    auto [flag_args, command] = split_at_dash_dash(args);
    flags_.command = command;
    std::vector<const char*> argv;
    for (const auto& a : flag_args) argv.push_back(a.c_str());
    app_.parse(static_cast<int>(argv.size()), argv.data());
    return to_options(flags_, args);
  }

  CLI::App app_{"test", "bpfprof"};
  RecordFlags flags_;
  CLI::App* record_ = add_record_command(app_, flags_);
};

TEST_F(RecordCommandTest, PerfStyleFlagsAndCommand) {
  auto o = parse({"record", "-a", "-F", "999", "-g", "-o", "out.data", "--", "sleep", "1"});
  ASSERT_TRUE(o.ok()) << o.error().to_string();
  EXPECT_TRUE(o->system_wide);
  EXPECT_EQ(o->frequency, 999u);
  EXPECT_FALSE(o->period.has_value());
  EXPECT_TRUE(o->callchain);
  EXPECT_EQ(o->output, "out.data");
  EXPECT_EQ(o->command, (std::vector<std::string>{"sleep", "1"}));
  EXPECT_EQ(o->cmdline.at(1), "record");
  EXPECT_EQ(o->mmap_pages, record::kDefaultMmapPages);
}

// -z, --compression-level[=n] as perf takes them: -z is 1, 0 is 1, more
// than 22 is 22; a value only after '='.
TEST_F(RecordCommandTest, CompressionLevelAsPerf) {
  struct Case {
    std::vector<std::string> args;
    std::optional<int> level;
  };
  for (const Case& c :
       {Case{{"record", "-a"}, std::nullopt}, Case{{"record", "-a", "-z"}, 1},
        Case{{"record", "-za"}, 1}, Case{{"record", "-a", "--compression-level"}, 1},
        Case{{"record", "-a", "--compression-level=5"}, 5},
        Case{{"record", "-a", "--compression-level=0"}, 1},
        Case{{"record", "-a", "--compression-level=30"}, 22}}) {
    flags_.compression_level = 0;
    auto o = parse(c.args);
    ASSERT_TRUE(o.ok()) << c.args.back() << ": " << o.error().to_string();
    EXPECT_EQ(o->compression_level, c.level) << c.args.back();
  }
}

TEST_F(RecordCommandTest, CompressionLevelGluedToShortFlagIsRefusedWithAHint) {
  auto o = parse({"record", "-a", "-z5"});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.error().message.find("--compression-level=5"), std::string::npos)
      << o.error().message;
}

// perf's --switch-output[=mode] (signal without a value) and --switch-max-files.
TEST_F(RecordCommandTest, SwitchOutputAsPerf) {
  using Mode = record::SwitchOutput::Mode;
  auto o = parse({"record", "-a", "--switch-output"});
  ASSERT_TRUE(o.ok()) << o.error().to_string();
  ASSERT_TRUE(o->switch_output.has_value());
  EXPECT_EQ(o->switch_output->mode, Mode::kSignal);
  o = parse({"record", "-a", "--switch-output=10s", "--switch-max-files", "3"});
  ASSERT_TRUE(o.ok()) << o.error().to_string();
  EXPECT_EQ(o->switch_output->mode, Mode::kTime);
  EXPECT_EQ(o->switch_output->seconds, 10u);
  EXPECT_EQ(o->switch_max_files, 3u);
  o = parse({"record", "-a", "--switch-output=1M"});
  ASSERT_TRUE(o.ok()) << o.error().to_string();
  EXPECT_EQ(o->switch_output->mode, Mode::kSize);
  EXPECT_EQ(o->switch_output->bytes, 1u << 20);
  // Without '=' the next word is the command, as with perf.
  o = parse({"record", "--switch-output", "sleep", "1"});
  ASSERT_TRUE(o.ok()) << o.error().to_string();
  EXPECT_EQ(o->switch_output->mode, Mode::kSignal);
  EXPECT_EQ(o->command, (std::vector<std::string>{"sleep", "1"}));
}

TEST_F(RecordCommandTest, BadSwitchOutputValuesAreOneLine) {
  for (const char* arg : {"--switch-output=10x", "--switch-output=1.5s", "--switch-output=0M"}) {
    auto o = parse({"record", "-a", arg});
    ASSERT_FALSE(o.ok()) << arg;
    EXPECT_EQ(o.error().code, Errc::kInvalidArgument) << arg;
    EXPECT_EQ(o.error().message.find('\n'), std::string::npos);
    EXPECT_NE(o.error().message.find(arg), std::string::npos) << o.error().message;
  }
  auto o = parse({"record", "-a", "--switch-max-files", "2"});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.error().message.find("--switch-output"), std::string::npos) << o.error().message;
}

TEST_F(RecordCommandTest, BareZLeavesTheCommandAlone) {
  auto o = parse({"record", "-z", "sleep", "1"});
  ASSERT_TRUE(o.ok()) << o.error().to_string();
  EXPECT_EQ(o->compression_level, 1);
  EXPECT_EQ(o->command, (std::vector<std::string>{"sleep", "1"}));
}

TEST_F(RecordCommandTest, CommandWithoutDashDashKeepsItsOwnFlags) {
  auto o = parse({"record", "-a", "-q", "ls", "-l", "-a"});
  ASSERT_TRUE(o.ok()) << o.error().to_string();
  EXPECT_TRUE(flags_.quiet);
  EXPECT_EQ(o->command, (std::vector<std::string>{"ls", "-l", "-a"}));
}

TEST_F(RecordCommandTest, DashDashKeepsEverythingAfterIt) {
  auto o = parse({"record", "-a", "--", "sh", "-c", "exit 0", "--", "x"});
  ASSERT_TRUE(o.ok()) << o.error().to_string();
  EXPECT_EQ(o->command, (std::vector<std::string>{"sh", "-c", "exit 0", "--", "x"}));
}

TEST_F(RecordCommandTest, DurationCpusPidPages) {
  auto o =
      parse({"record", "-C", "0-1", "-d", "2.5", "-m", "64", "-e", "cpu-clock", "-c", "10000"});
  ASSERT_TRUE(o.ok()) << o.error().to_string();
  EXPECT_EQ(o->cpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(o->duration_s, 2.5);
  EXPECT_EQ(o->mmap_pages, 64u);
  EXPECT_EQ(o->event, "cpu-clock");
  EXPECT_EQ(o->period, 10000u);
  EXPECT_FALSE(o->frequency.has_value());
}

TEST_F(RecordCommandTest, Pid) {
  auto o = parse({"record", "-p", "123", "--duration", "1"});
  ASSERT_TRUE(o.ok()) << o.error().to_string();
  EXPECT_EQ(o->pid, 123);
  EXPECT_FALSE(o->system_wide);
}

TEST_F(RecordCommandTest, MmapPagesNotAPowerOfTwo) {
  auto o = parse({"record", "-a", "-m", "1000"});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.error().message.find("power of two"), std::string::npos);
  EXPECT_EQ(exit_code_for(o.error()), 2);
}

TEST_F(RecordCommandTest, UnknownFlagBeforeTheCommand) {
  auto o = parse({"record", "-a", "--bogus"});
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.error().message, "unknown option --bogus");
  EXPECT_EQ(exit_code_for(o.error()), 2);
}

TEST_F(RecordCommandTest, BadCpuList) {
  auto o = parse({"record", "-C", "x-y"});
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.error().code, Errc::kInvalidArgument);
}

TEST_F(RecordCommandTest, FrequencyAndPeriodExcludeEachOther) {
  EXPECT_THROW(parse({"record", "-a", "-F", "10", "-c", "5"}), CLI::ParseError);
}

TEST_F(RecordCommandTest, NothingToRecord) {
  auto o = parse({"record", "-o", "x.data"});
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(exit_code_for(o.error()), 2);
}

TEST(ExitCodeTest, RefusalsAreTwoFailuresAreOne) {
  EXPECT_EQ(exit_code_for(make_error(Errc::kPermission, "x")), 2);
  EXPECT_EQ(exit_code_for(make_error(Errc::kInvalidArgument, "x")), 2);
  EXPECT_EQ(exit_code_for(make_error(Errc::kUnsupported, "x")), 2);
  EXPECT_EQ(exit_code_for(make_error(Errc::kIo, "x")), 1);
  EXPECT_EQ(exit_code_for(make_error(Errc::kSystem, "x")), 1);
}

TEST(RunRecordTest, UnknownEventExitsTwo) {
  CLI::App app{"test", "bpfprof"};
  RecordFlags flags;
  add_record_command(app, flags);
  const char* argv[] = {"bpfprof", "record", "-a", "-e", "no-such-event", "-o", "/nonexistent/x"};
  app.parse(7, argv);
  EXPECT_EQ(run_record(flags, {"bpfprof", "record"}), 2);
}

}  // namespace
}  // namespace bpfprof::cli
