// SPDX-License-Identifier: Apache-2.0
#include "cli/report_command.h"

#include "script/script.h"

#include <gtest/gtest.h>

namespace bpfprof::cli {
namespace {

// Parses `args` (after "bpfprof") with the report and script subcommands.
class ReportCommandTest : public ::testing::Test {
 protected:
  void parse(std::vector<std::string> args) {
    args.insert(args.begin(), "bpfprof");
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    app_.parse(static_cast<int>(argv.size()), argv.data());
  }

  CLI::App app_{"test", "bpfprof"};
  ReportFlags report_;
  ScriptFlags script_;
  CLI::App* report_cmd_ = add_report_command(app_, report_);
  CLI::App* script_cmd_ = add_script_command(app_, script_);
};

TEST_F(ReportCommandTest, DefaultsAreSymTextPerfData) {
  parse({"report"});
  EXPECT_EQ(report_.input, "perf.data");
  auto o = to_render_options(report_);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->keys, std::vector<profile::SortKey>{profile::SortKey::kSym});
  EXPECT_FALSE(o->bpf_only);
  EXPECT_FALSE(o->callgraph);
  EXPECT_FALSE(report_.quiet);
}

TEST_F(ReportCommandTest, QuietTurnsOffProgress) {
  parse({"report", "-q"});
  EXPECT_TRUE(report_.quiet);
}

TEST_F(ReportCommandTest, SortKeysCommaSeparatedOrRepeated) {
  parse({"report", "-i", "x.data", "--sort", "prog,sym", "--sort", "line", "--bpf-only", "-g",
         "--format", "json"});
  auto o = to_render_options(report_);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->keys, (std::vector<profile::SortKey>{profile::SortKey::kProg, profile::SortKey::kSym,
                                                    profile::SortKey::kLine}));
  EXPECT_TRUE(o->bpf_only);
  EXPECT_TRUE(o->callgraph);
  EXPECT_EQ(report_.format, "json");
  EXPECT_EQ(report_.input, "x.data");
}

TEST_F(ReportCommandTest, UnknownSortKeyNamesValidKeys) {
  parse({"report", "--sort", "cpu"});
  auto o = to_render_options(report_);
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.error().code, Errc::kInvalidArgument);
  EXPECT_NE(o.error().message.find("prog, sym, dso, comm, pid, line"), std::string::npos);
}

TEST_F(ReportCommandTest, BadFormatIsAParseError) {
  EXPECT_THROW(parse({"report", "--format", "xml"}), CLI::ParseError);
  EXPECT_THROW(parse({"script", "--format", "csv"}), CLI::ParseError);
}

TEST_F(ReportCommandTest, ScriptFlags) {
  parse({"script", "-i", "y.data", "--format", "json", "-j", "3"});
  EXPECT_TRUE(script_cmd_->parsed());
  EXPECT_EQ(script_.input, "y.data");
  EXPECT_EQ(script_.format, "json");
  EXPECT_EQ(script_.jobs, 3u);
  EXPECT_FALSE(script_.quiet);
}

TEST_F(ReportCommandTest, ScriptCallGraphFieldsAndNamingFlags) {
  parse({"script", "-G", "-F", "comm,tid,ip,sym", "--vdso", "v.so", "--full-signatures"});
  EXPECT_TRUE(script_.hide_call_graph);
  EXPECT_EQ(script_.fields, "comm,tid,ip,sym");
  EXPECT_EQ(script_.vdso, "v.so");
  EXPECT_TRUE(script_.full_signatures);
  parse({"script", "--hide-call-graph", "--fields", "dso"});
  EXPECT_TRUE(script_.hide_call_graph);
  EXPECT_EQ(script_.fields, "dso");
}

TEST_F(ReportCommandTest, ScriptFieldsParseAndUnknownOnesAreNamed) {
  auto f = script::parse_fields("comm,tid,time,,ip,sym,symoff,dso");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*f, script::kFieldComm | script::kFieldTid | script::kFieldTime | script::kFieldIp |
                    script::kFieldSym | script::kFieldSymoff | script::kFieldDso);
  auto bad = script::parse_fields("comm,addr");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::kInvalidArgument);
  EXPECT_NE(bad.error().message.find("'addr'"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(script::parse_fields(",").ok());
}

TEST_F(ReportCommandTest, ScriptQuiet) {
  parse({"script", "--quiet"});
  EXPECT_TRUE(script_.quiet);
}

}  // namespace
}  // namespace bpfprof::cli
