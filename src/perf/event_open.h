// SPDX-License-Identifier: Apache-2.0
// perf_event_open and the ioctls bpfprof uses, each returning Result with the
// operation name and errno; attr builders for the sampling and side-band events.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "perf/abi.h"

namespace bpfprof::perf {

Result<UniqueFd> open_event(const perf_event_attr& attr, pid_t pid, int cpu, int group_fd = -1,
                            unsigned long flags = PERF_FLAG_FD_CLOEXEC);
Result<uint64_t> event_id(int fd);           // PERF_EVENT_IOC_ID
Status enable_event(int fd);                 // PERF_EVENT_IOC_ENABLE
Status disable_event(int fd);                // PERF_EVENT_IOC_DISABLE
Status set_output(int fd, int target_fd);    // PERF_EVENT_IOC_SET_OUTPUT

// CPUs listed in /sys/devices/system/cpu/online ("0-3,5").
Result<std::vector<int>> online_cpus();
// Parses a CPU list such as "0-3,5" (also used for -C).
Result<std::vector<int>> parse_cpu_list(const std::string& list);

// What to sample. An event is either hardware cycles or a software clock.
struct EventSpec {
  std::string name;   // as the user wrote it and as EVENT_DESC names it
  uint32_t type = PERF_TYPE_SOFTWARE;
  uint64_t config = PERF_COUNT_SW_CPU_CLOCK;
};
// Names we accept for -e: cycles, cpu-cycles, cpu-clock, task-clock, instructions...
Result<EventSpec> parse_event(const std::string& name);
std::string supported_events();  // "cycles, cpu-clock, ..." for error messages

struct SamplingConfig {
  EventSpec event;
  std::optional<uint64_t> freq;    // -F
  std::optional<uint64_t> period;  // -c
  bool callchain = false;          // PERF_SAMPLE_CALLCHAIN
  bool user_callchain = false;     // with user stacks too (else exclude_callchain_user)
  bool inherit = false;            // following a command or pid
  bool enable_on_exec = false;
  bool cgroup = false;             // PERF_SAMPLE_CGROUP (record --cgroup)
  uint32_t wakeup_watermark = 0;   // bytes; 0 = kernel default
};

// sample_type = IDENTIFIER|IP|TID|TIME|CPU|PERIOD (+CALLCHAIN, +CGROUP), sample_id_all,
// exclude_callchain_user unless user_callchain,
// use_clockid CLOCK_MONOTONIC, disabled, size = kAttrSizeWritten.
perf_event_attr make_sampling_attr(const SamplingConfig& config);

struct SidebandConfig {
  bool ksymbol = true, bpf_event = true;
  bool mmap2 = true, comm = true, task = true;
  bool cgroup = false;             // CGROUP records for cgroups created meanwhile
  uint32_t wakeup_events = 0;      // 1 = wake on every record (enricher)
  uint32_t wakeup_watermark = 0;   // bytes, used when wakeup_events == 0
};
// A PERF_COUNT_SW_DUMMY event carrying only side-band records, same sample_type
// as the sampling attr so trailers match across attrs. Unlike the sampling
// attr it is not `disabled`: side-band records flow as soon as it is opened
// (so nothing between open and enable is missed); enable_event on it is harmless.
perf_event_attr make_sideband_attr(const SidebandConfig& config, uint64_t sample_type);

}  // namespace bpfprof::perf
