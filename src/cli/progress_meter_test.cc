// SPDX-License-Identifier: Apache-2.0
#include "cli/progress_meter.h"

#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "testing/subprocess.h"

namespace bpfprof::cli {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kMiB = 1 << 20;

TEST(FormatWalkProgress, PassOfTwoWithWholeMegabytes) {
  WalkLine l{"perf.data", 1, 2, 1.23, 412 * kMiB, 1370 * kMiB, 859163, 0};
  EXPECT_EQ(format_walk_progress(l),
            "[ reading perf.data: pass 1/2, 1.2 s, 412 MB of 1370 MB (30%), 859163 samples ]");
}

TEST(FormatWalkProgress, OnePassSmallFileAndLost) {
  WalkLine l{"x.data", 1, 1, 0.5, 3 * kMiB / 2, 6 * kMiB, 12, 7};
  EXPECT_EQ(format_walk_progress(l),
            "[ reading x.data: 0.5 s, 1.5 MB of 6.0 MB (25%), 12 samples, 7 lost ]");
}

TEST(FormatWalkProgress, NotOpenYetIsOnlyTheTime) {
  WalkLine l{"-", 0, 2, 2.04, 0, 0, 0, 0};
  EXPECT_EQ(format_walk_progress(l), "[ reading -: 2.0 s ]");
}

TEST(FormatWalkProgress, NeverAboveTheTotal) {
  WalkLine l{"a", 3, 2, 1, 9 * kMiB, 8 * kMiB, 1, 0};
  EXPECT_EQ(format_walk_progress(l),
            "[ reading a: pass 3/3, 1.0 s, 8.0 MB of 8.0 MB (100%), 1 samples ]");
}

// The meter writes to a file; the test reads it back by path.
class ProgressMeterTest : public ::testing::Test {
 protected:
  std::string written() {
    std::ifstream in(path_, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  ProgressMeter::Options options(std::chrono::milliseconds after) {
    ProgressMeter::Options o;
    o.show = true;
    o.passes = 2;
    o.out = out_;
    o.after = after;
    o.every = 5ms;
    return o;
  }
  void TearDown() override { std::fclose(out_); }

  testing::TempDir tmp_;
  std::string path_ = tmp_.file("tty");
  std::FILE* out_ = std::fopen(path_.c_str(), "w");
};

TEST_F(ProgressMeterTest, HiddenMeterWritesNothingAndGivesNoProgress) {
  ProgressMeter::Options o = options(0ms);
  o.show = false;
  ProgressMeter m(o, "x");
  EXPECT_EQ(m.progress(), nullptr);
  m.stop();
  EXPECT_EQ(written(), "");
}

TEST_F(ProgressMeterTest, ShortRunPrintsNothing) {
  ProgressMeter m(options(10s), "x");
  ASSERT_NE(m.progress(), nullptr);
  m.progress()->begin_file(100);
  m.stop();
  EXPECT_EQ(written(), "");
}

TEST_F(ProgressMeterTest, RedrawsInPlaceAndErasesOnStop) {
  ProgressMeter m(options(0ms), "f.data");
  // Drawn before the constructor returned (delay 0); the meter's thread may
  // have redrawn since (the time shown changes every 0.1 s).
  EXPECT_TRUE(written().starts_with("\r[ reading f.data: 0.0 s ]\x1b[K")) << written();
  analysis::WalkProgress* p = m.progress();
  p->begin_file(4 * kMiB);
  p->add_bytes(kMiB);
  p->add_found(10, 0);
  const std::string want = "pass 1/2, ";
  const std::string numbers = " s, 1.0 MB of 4.0 MB (25%), 10 samples ]\x1b[K";
  for (int i = 0; i < 2000 && written().find(numbers) == std::string::npos; i++) {
    std::this_thread::sleep_for(5ms);
  }
  m.next_pass();
  p->add_bytes(4 * kMiB);
  for (int i = 0; i < 2000 && written().find("(100%)") == std::string::npos; i++) {
    std::this_thread::sleep_for(5ms);
  }
  m.stop();
  const std::string out = written();
  EXPECT_NE(out.find("\r[ reading f.data: " + want), std::string::npos) << out;
  EXPECT_NE(out.find(numbers), std::string::npos) << out;
  EXPECT_NE(out.find("pass 2/2, "), std::string::npos) << out;
  EXPECT_NE(out.find("4.0 MB of 4.0 MB (100%)"), std::string::npos) << out;
  EXPECT_EQ(out.find('\n'), std::string::npos) << out;
  ASSERT_GE(out.size(), 4u);
  EXPECT_EQ(out.substr(out.size() - 4), "\r\x1b[K");
  m.stop();  // idempotent: erased once
  EXPECT_EQ(written(), out);
}

TEST_F(ProgressMeterTest, NextFileShowsTheNewLabel) {
  ProgressMeter m(options(0ms), "a.data (1 of 2)");
  m.next_file("b.data (2 of 2)");
  m.progress()->begin_file(kMiB);
  for (int i = 0; i < 2000 && written().find("b.data (2 of 2): pass 1/2") == std::string::npos;
       i++) {
    std::this_thread::sleep_for(5ms);
  }
  m.stop();
  EXPECT_NE(written().find("[ reading b.data (2 of 2): pass 1/2, "), std::string::npos)
      << written();
}

}  // namespace
}  // namespace bpfprof::cli
