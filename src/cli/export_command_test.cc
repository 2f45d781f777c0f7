// SPDX-License-Identifier: Apache-2.0
#include "cli/export_command.h"

#include <gtest/gtest.h>

namespace bpfprof::cli {
namespace {

class ExportCommandTest : public ::testing::Test {
 protected:
  void parse(std::vector<std::string> args) {
    args.insert(args.begin(), "bpfprof");
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    app_.parse(static_cast<int>(argv.size()), argv.data());
  }

  CLI::App app_{"test", "bpfprof"};
  ExportFlags flags_;
  CLI::App* cmd_ = add_export_command(app_, flags_);
};

TEST_F(ExportCommandTest, DefaultsAreFoldedToStdoutFromPerfData) {
  parse({"export"});
  EXPECT_EQ(flags_.input, "perf.data");
  EXPECT_EQ(flags_.format, "folded");
  EXPECT_EQ(flags_.output, "");
  EXPECT_FALSE(flags_.bpf_only);
  EXPECT_EQ(flags_.pid, -1);
  EXPECT_EQ(flags_.time, "");
}

TEST_F(ExportCommandTest, FlagsAreBound) {
  parse({"export", "-i", "x.data", "--format", "html", "-o", "f.html", "--bpf-only", "--pid", "42",
         "--time", "1.5,2", "-q"});
  EXPECT_EQ(flags_.input, "x.data");
  EXPECT_EQ(flags_.format, "html");
  EXPECT_EQ(flags_.output, "f.html");
  EXPECT_TRUE(flags_.bpf_only);
  EXPECT_EQ(flags_.pid, 42);
  EXPECT_EQ(flags_.time, "1.5,2");
  EXPECT_TRUE(flags_.quiet);
  EXPECT_THROW(parse({"export", "--pid", "-3"}), CLI::ParseError);
}

TEST(ExportTimeRange, BothSidesOrEitherOpen) {
  auto r = parse_time_range("1.5,2");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->from_s, 1.5);
  EXPECT_EQ(r->to_s, 2.0);
  r = parse_time_range(",0.25");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->from_s);
  EXPECT_EQ(r->to_s, 0.25);
  r = parse_time_range("3,");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->from_s, 3.0);
  EXPECT_FALSE(r->to_s);
}

TEST(ExportTimeRange, RejectsMalformedRanges) {
  for (const char* bad : {"", "1", "1,2,3", "a,2", "1,2s", "-1,2", "3,2"}) {
    auto r = parse_time_range(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, Errc::kInvalidArgument) << bad;
  }
}

TEST(ExportCommand, UnsupportedFormatListsTheSupportedOnesAndExits2) {
  ExportFlags f;
  f.format = "bogus";
  f.input = "/nonexistent/never-read.data";  // the format is checked first
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_export(f), 2);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("unsupported format 'bogus'"), std::string::npos) << err;
  EXPECT_NE(err.find("folded, html, json"), std::string::npos) << err;
}

}  // namespace
}  // namespace bpfprof::cli
