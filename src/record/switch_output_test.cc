// SPDX-License-Identifier: Apache-2.0
#include "record/switch_output.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "record/options.h"

namespace bpfprof::record {
namespace {

using Mode = SwitchOutput::Mode;

TEST(SwitchOutputTest, SignalSizesAndTimesAsPerfSpellsThem) {
  struct Case {
    const char* text;
    Mode mode;
    uint64_t bytes, seconds;
  };
  for (const Case& c : {Case{"signal", Mode::kSignal, 0, 0}, Case{"100B", Mode::kSize, 100, 0},
                        Case{"4K", Mode::kSize, 4096, 0}, Case{"100M", Mode::kSize, 100 << 20, 0},
                        Case{"1G", Mode::kSize, 1ull << 30, 0}, Case{"10s", Mode::kTime, 0, 10},
                        Case{"1m", Mode::kTime, 0, 60}, Case{"2h", Mode::kTime, 0, 7200},
                        Case{"1d", Mode::kTime, 0, 86400}}) {
    auto s = parse_switch_output(c.text);
    ASSERT_TRUE(s.ok()) << c.text << ": " << s.error().message;
    EXPECT_EQ(s->mode, c.mode) << c.text;
    EXPECT_EQ(s->bytes, c.bytes) << c.text;
    EXPECT_EQ(s->seconds, c.seconds) << c.text;
  }
}

TEST(SwitchOutputTest, BadValuesAreOneLineErrors) {
  for (const char* text : {"", "s", "10", "10x", "1.5s", "-1s", "0s", "0M", "10 s", "s10", "10ss",
                           "1S", "Signal", "99999999999999999999G", "18446744073709551615G"}) {
    auto s = parse_switch_output(text);
    ASSERT_FALSE(s.ok()) << "'" << text << "' accepted";
    EXPECT_EQ(s.error().code, Errc::kInvalidArgument);
    EXPECT_EQ(s.error().message.find('\n'), std::string::npos);
    EXPECT_EQ(s.error().message.rfind("--switch-output=", 0), 0u) << s.error().message;
  }
}

TEST(SwitchOutputTest, NamesCarryPerfsTimestamp) {
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  // 2026-12-06 19:34:38.127 UTC
  const timespec t{1796585678, 127'000'000};
  EXPECT_EQ(timestamped_name("perf.data", t), "perf.data.2026120619343812");
  EXPECT_EQ(timestamped_name("/tmp/x", timespec{1796585678, 5'000'000}), "/tmp/x.2026120619343800");
}

TEST(SwitchOutputTest, MaxFilesIsOnlyWithSwitchOutputAndNotToADevice) {
  RecordOptions o;
  o.system_wide = true;
  o.switch_max_files = 2;
  EXPECT_FALSE(validate(o).ok());
  o.switch_output = SwitchOutput{};
  EXPECT_TRUE(validate(o).ok());
  o.output = "/dev/null";
  auto s = validate(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("device"), std::string::npos) << s.error().message;
}

class SwitchedFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/bpfprof-switch-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void make(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
  std::set<std::string> listing() const {
    std::set<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      names.insert(e.path().filename().string());
    }
    return names;
  }
  std::string dir_;
};

TEST_F(SwitchedFilesTest, RenamesWithoutOverwritingAndKeepsTheNewestN) {
  const std::string out = dir_ + "/perf.data";
  auto files = SwitchedFiles::open(out, 2);
  ASSERT_TRUE(files.ok()) << files.error().message;
  std::vector<std::string> names;
  for (int i = 0; i < 4; i++) {
    make(out, std::to_string(i));
    auto name = files->done();
    ASSERT_TRUE(name.ok()) << name.error().message;
    ASSERT_EQ(name->rfind(out + ".", 0), 0u) << *name;
    EXPECT_EQ(name->size(), out.size() + 17) << *name;  // "." and 16 digits
    names.push_back(*name);
  }
  // Four switches within milliseconds: four names, none written over.
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), 4u);
  EXPECT_EQ(files->renamed(), 4u);
  const std::set<std::string> left = listing();
  ASSERT_EQ(left.size(), 2u);
  EXPECT_TRUE(left.count(std::filesystem::path(names[2]).filename().string()));
  EXPECT_TRUE(left.count(std::filesystem::path(names[3]).filename().string()));
  std::ifstream newest(names[3]);
  std::string text;
  newest >> text;
  EXPECT_EQ(text, "3");
}

TEST_F(SwitchedFilesTest, AMissingFileIsAnError) {
  auto files = SwitchedFiles::open(dir_ + "/perf.data", 0);
  ASSERT_TRUE(files.ok());
  auto name = files->done();
  ASSERT_FALSE(name.ok());
  EXPECT_NE(name.error().message.find("renaming"), std::string::npos) << name.error().message;
}

}  // namespace
}  // namespace bpfprof::record
