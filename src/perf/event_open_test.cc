// SPDX-License-Identifier: Apache-2.0
#include "perf/event_open.h"

#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "perf/records.h"

namespace bpfprof::perf {
namespace {

TEST(EventOpenTest, ParseEvent) {
  auto cycles = parse_event("cycles");
  ASSERT_TRUE(cycles.ok());
  EXPECT_EQ(cycles->type, PERF_TYPE_HARDWARE);
  EXPECT_EQ(cycles->config, PERF_COUNT_HW_CPU_CYCLES);
  EXPECT_EQ(parse_event("cpu-cycles")->config, PERF_COUNT_HW_CPU_CYCLES);
  EXPECT_EQ(parse_event("instructions")->config, PERF_COUNT_HW_INSTRUCTIONS);
  auto clock = parse_event("cpu-clock");
  EXPECT_EQ(clock->type, PERF_TYPE_SOFTWARE);
  EXPECT_EQ(clock->config, PERF_COUNT_SW_CPU_CLOCK);
  EXPECT_EQ(clock->name, "cpu-clock");
  EXPECT_EQ(parse_event("task-clock")->config, PERF_COUNT_SW_TASK_CLOCK);

  auto bad = parse_event("cylces");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::kInvalidArgument);
  EXPECT_NE(bad.error().message.find("cylces"), std::string::npos);
  EXPECT_NE(bad.error().message.find("cpu-clock"), std::string::npos);
}

TEST(EventOpenTest, ParseCpuList) {
  EXPECT_EQ(*parse_cpu_list("0-3,5\n"), (std::vector<int>{0, 1, 2, 3, 5}));
  EXPECT_EQ(*parse_cpu_list("7"), (std::vector<int>{7}));
  EXPECT_EQ(*parse_cpu_list("3,1-2,2"), (std::vector<int>{1, 2, 3}));
  for (const char* bad : {"", "a", "1-", "-1", "3-1", "1,,2", "1,", "0-99999999", "1 2"}) {
    auto r = parse_cpu_list(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.error().code, Errc::kInvalidArgument);
    }
  }
  auto online = online_cpus();
  ASSERT_TRUE(online.ok()) << online.error().to_string();
  EXPECT_FALSE(online->empty());
}

TEST(EventOpenTest, SamplingAttr) {
  SamplingConfig config{.event = *parse_event("cycles"), .freq = 999, .callchain = true,
                        .user_callchain = true, .inherit = true, .wakeup_watermark = 4096};
  perf_event_attr attr = make_sampling_attr(config);
  EXPECT_EQ(attr.size, kAttrSizeWritten);
  EXPECT_EQ(attr.type, PERF_TYPE_HARDWARE);
  EXPECT_EQ(attr.sample_type, PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
                                  PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
                                  PERF_SAMPLE_CALLCHAIN);
  EXPECT_EQ(attr.freq, 1u);
  EXPECT_EQ(attr.sample_freq, 999u);
  EXPECT_EQ(attr.sample_id_all, 1u);
  EXPECT_EQ(attr.use_clockid, 1u);
  EXPECT_EQ(attr.clockid, CLOCK_MONOTONIC);
  EXPECT_EQ(attr.disabled, 1u);
  EXPECT_EQ(attr.inherit, 1u);
  EXPECT_EQ(attr.enable_on_exec, 0u);
  EXPECT_EQ(attr.exclude_callchain_user, 0u);
  EXPECT_EQ(attr.watermark, 1u);
  EXPECT_EQ(attr.wakeup_watermark, 4096u);

  // Kernel callchains only (record's default): no user stack copies.
  config.user_callchain = false;
  attr = make_sampling_attr(config);
  EXPECT_NE(attr.sample_type & PERF_SAMPLE_CALLCHAIN, 0u);
  EXPECT_EQ(attr.exclude_callchain_user, 1u);

  config.period = 100000;
  config.callchain = false;
  config.wakeup_watermark = 0;
  attr = make_sampling_attr(config);
  EXPECT_EQ(attr.freq, 0u);
  EXPECT_EQ(attr.sample_period, 100000u);
  EXPECT_EQ(attr.sample_type & PERF_SAMPLE_CALLCHAIN, 0u);
  EXPECT_EQ(attr.watermark, 0u);
  EXPECT_TRUE(SampleLayout::from_attr(attr).ok());

  config.cgroup = true;
  attr = make_sampling_attr(config);
  EXPECT_NE(attr.sample_type & PERF_SAMPLE_CGROUP, 0u);
  auto layout = SampleLayout::from_attr(attr);
  ASSERT_TRUE(layout.ok());
  EXPECT_GT(layout->fast_fixed_bytes(), 0);
}

TEST(EventOpenTest, SidebandAttrKeepsSampleType) {
  const uint64_t st = make_sampling_attr({.event = *parse_event("cpu-clock"), .callchain = true})
                          .sample_type;
  perf_event_attr attr = make_sideband_attr({.wakeup_events = 1}, st);
  EXPECT_EQ(attr.type, PERF_TYPE_SOFTWARE);
  EXPECT_EQ(attr.config, PERF_COUNT_SW_DUMMY);
  EXPECT_EQ(attr.sample_type, st);
  EXPECT_EQ(attr.size, kAttrSizeWritten);
  EXPECT_EQ(attr.sample_id_all, 1u);
  EXPECT_EQ(attr.use_clockid, 1u);
  EXPECT_EQ(attr.clockid, CLOCK_MONOTONIC);
  EXPECT_EQ(attr.ksymbol, 1u);
  EXPECT_EQ(attr.bpf_event, 1u);
  EXPECT_EQ(attr.mmap, 1u);
  EXPECT_EQ(attr.mmap2, 1u);
  EXPECT_EQ(attr.comm, 1u);
  EXPECT_EQ(attr.comm_exec, 1u);
  EXPECT_EQ(attr.task, 1u);
  EXPECT_EQ(attr.wakeup_events, 1u);
  EXPECT_EQ(attr.watermark, 0u);
  EXPECT_EQ(attr.cgroup, 0u);
  EXPECT_EQ(make_sideband_attr({.cgroup = true}, st).cgroup, 1u);

  attr = make_sideband_attr({.ksymbol = false, .mmap2 = false, .wakeup_watermark = 8192}, st);
  EXPECT_EQ(attr.ksymbol, 0u);
  EXPECT_EQ(attr.mmap2, 0u);
  EXPECT_EQ(attr.mmap, 0u);
  EXPECT_EQ(attr.watermark, 1u);
  EXPECT_EQ(attr.wakeup_watermark, 8192u);
}

TEST(EventOpenTest, OpenErrorNamesEventAndCpu) {
  perf_event_attr attr = make_sampling_attr({.event = *parse_event("cpu-clock")});
  attr.size = 1;  // the kernel refuses sizes below VER0 with E2BIG/EINVAL
  auto fd = open_event(attr, 0, 123456);
  ASSERT_FALSE(fd.ok());
  EXPECT_NE(fd.error().message.find("perf_event_open(cpu-clock"), std::string::npos)
      << fd.error().message;
  EXPECT_NE(fd.error().message.find("cpu 123456"), std::string::npos);
  EXPECT_NE(fd.error().sys_errno, 0);
}

}  // namespace
}  // namespace bpfprof::perf
