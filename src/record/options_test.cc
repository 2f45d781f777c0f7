// SPDX-License-Identifier: Apache-2.0
#include "record/options.h"

#include <gtest/gtest.h>

namespace bpfprof::record {
namespace {

RecordOptions system_wide() {
  RecordOptions o;
  o.system_wide = true;
  return o;
}

TEST(OptionsTest, SystemWideDefaultsAreValid) { EXPECT_TRUE(validate(system_wide()).ok()); }

TEST(OptionsTest, MmapPagesMustBeAPowerOfTwo) {
  RecordOptions o = system_wide();
  o.mmap_pages = 1000;
  auto s = validate(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, Errc::kInvalidArgument);
  EXPECT_NE(s.error().message.find("power of two"), std::string::npos) << s.error().message;
  o.mmap_pages = 0;
  EXPECT_FALSE(validate(o).ok());
  o.mmap_pages = 64;
  EXPECT_TRUE(validate(o).ok());
}

TEST(OptionsTest, NeedsATarget) {
  RecordOptions o;
  EXPECT_FALSE(validate(o).ok());
  o.command = {"sleep", "1"};
  EXPECT_TRUE(validate(o).ok());
  o = {};
  o.cpus = {0};
  EXPECT_TRUE(validate(o).ok());
  o = {};
  o.pid = 1;
  EXPECT_TRUE(validate(o).ok());
}

TEST(OptionsTest, ContradictionsAreRefused) {
  RecordOptions o;
  o.pid = 1;
  o.command = {"true"};
  EXPECT_FALSE(validate(o).ok());
  o = system_wide();
  o.pid = 1;
  EXPECT_FALSE(validate(o).ok());
  o = system_wide();
  o.frequency = 99;
  o.period = 1000;
  EXPECT_FALSE(validate(o).ok());
  o = system_wide();
  o.frequency = 0;
  EXPECT_FALSE(validate(o).ok());
  o = system_wide();
  o.duration_s = -1;
  EXPECT_FALSE(validate(o).ok());
  o = system_wide();
  o.output = "-";
  EXPECT_FALSE(validate(o).ok());
}

TEST(OptionsTest, PowerOfTwo) {
  EXPECT_FALSE(is_power_of_two(0));
  EXPECT_TRUE(is_power_of_two(1));
  EXPECT_TRUE(is_power_of_two(1024));
  EXPECT_FALSE(is_power_of_two(1023));
}

}  // namespace
}  // namespace bpfprof::record
