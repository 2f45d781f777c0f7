// SPDX-License-Identifier: Apache-2.0
#include "record/options.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "record/event_set.h"
#include "record/progress.h"
#include "record/recorder.h"

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

// A per-process recording is refused on its CPU-wide events (every recording
// follows BPF programs on all CPUs): the line says why, not "system-wide".
TEST(RefusalWordingTest, CpuWideEventsSayWhyTheyAreNeeded) {
  Error cpu_wide = explain_perf_open_error(make_sys_error("perf_event_open", EACCES), true);
  EXPECT_EQ(cpu_wide.code, Errc::kPermission);
  EXPECT_NE(cpu_wide.message.find("kernel.perf_event_paranoid <= 0 (now "), std::string::npos)
      << cpu_wide.message;
  EXPECT_NE(cpu_wide.message.find("BPF program loads and unloads are followed on every CPU"),
            std::string::npos)
      << cpu_wide.message;
  EXPECT_EQ(cpu_wide.message.find("system-wide"), std::string::npos) << cpu_wide.message;
  Error task = explain_perf_open_error(make_sys_error("perf_event_open", EACCES), false);
  EXPECT_NE(task.message.find("kernel.perf_event_paranoid <= 1 (now "), std::string::npos)
      << task.message;
  EXPECT_EQ(task.message.find("system-wide"), std::string::npos) << task.message;
}

TEST(RecordOptionsTest, CompressionLevelIsOneToTwentyTwo) {
  RecordOptions o;
  o.system_wide = true;
  for (int level : {1, 3, 22}) {
    o.compression_level = level;
    EXPECT_TRUE(validate(o).ok()) << level;
  }
  for (int level : {0, 23, -1}) {
    o.compression_level = level;
    EXPECT_FALSE(validate(o).ok()) << level;
  }
}

// The summary line names the ring data's original size and ratio under -z,
// as perf record -z does, and nothing of the kind without it.
TEST(RecordSummaryTest, SaysTheCompressionRatioUnderZ) {
  RecordStats s;
  s.output = "z.data";
  EXPECT_EQ(format_summary(s).find("compressed"), std::string::npos);
  s.compressed_in = 3 * 1024 * 1024;
  s.compressed_out = 256 * 1024;
  EXPECT_NE(format_summary(s).find("; ring data 3.000 MB compressed 12.0x"), std::string::npos)
      << format_summary(s);
}

TEST(RecordSummaryTest, SaysMetadataGoneAndCutOnlyWhenThereIsAny) {
  RecordStats s;
  s.output = "m.data";
  EXPECT_EQ(format_summary(s).find("metadata"), std::string::npos) << format_summary(s);
  s.metadata_gone = 2;
  s.metadata_cut = 3;
  EXPECT_NE(format_summary(s).find(" enriched (2 with metadata gone first) (3 metadata variables "
                                   "past the captured value),"),
            std::string::npos)
      << format_summary(s);
}

}  // namespace
}  // namespace bpfprof::record
