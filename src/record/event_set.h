// SPDX-License-Identifier: Apache-2.0
// The perf events of one recording: per CPU a sampling event (system-wide, or
// one per target thread redirected into a single ring) and a side-band dummy
// event, always system-wide, each with its own ring buffer. Collects the event
// ids the file's attrs list.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "perf/abi.h"
#include "perf/event_open.h"
#include "perf/ring_buffer.h"

namespace bpfprof::record {

// One mmap'd ring and the event fd that owns it.
struct CpuRing {
  int cpu = -1;
  UniqueFd fd;
  perf::RingBuffer ring;
};

// Opens `attr` on each CPU for `pid` (-1: all tasks) and maps a ring of
// `pages` data pages per CPU. Ids are appended to `ids`.
Result<std::vector<CpuRing>> open_per_cpu(const perf_event_attr& attr, pid_t pid,
                                          const std::vector<int>& cpus, uint32_t pages,
                                          std::vector<uint64_t>& ids);

class EventSet {
 public:
  struct Config {
    perf_event_attr sampling{};
    perf_event_attr sideband{};
    std::vector<int> cpus;           // sampling (-C, or all online)
    std::vector<int> sideband_cpus;  // every online CPU: BPF events come where the load ran
    // Tasks to sample; empty = every task (pid -1). Each gets one event per CPU,
    // all redirected into that CPU's ring.
    std::vector<pid_t> sample_tids;
    uint32_t sampling_pages = 0;
    uint32_t sideband_pages = 0;
    bool system_wide_hint = true;  // for permission messages only
  };

  static Result<EventSet> open(const Config& config);

  // Sampling starts here unless the attr has enable_on_exec.
  Status enable_sampling();
  Status enable_sideband();
  // Stops every event (best effort: a vanished task is not an error).
  void disable_all();

  std::vector<CpuRing>& sampling_rings() { return sampling_; }
  std::vector<CpuRing>& sideband_rings() { return sideband_; }
  const std::vector<uint64_t>& sampling_ids() const { return sampling_ids_; }
  const std::vector<uint64_t>& sideband_ids() const { return sideband_ids_; }

 private:
  std::vector<CpuRing> sampling_;
  std::vector<CpuRing> sideband_;
  std::vector<UniqueFd> redirected_;  // per-thread sampling fds writing into sampling_ rings
  std::vector<uint64_t> sampling_ids_, sideband_ids_;
};

// What to sample and on which CPUs and tasks: record's options and top's
// alike (open_events makes the attrs and the wake-ups).
struct EventRequest {
  perf::SamplingConfig sampling;  // its event: the one asked for
  // No hardware PMU (a VM): sample cpu-clock instead, and say so. Off when
  // the user named the event.
  bool fall_back = true;
  perf::SidebandConfig sideband;
  EventSet::Config set;  // CPUs, tasks and pages; its attrs are made here
};

// The events open: the set, the event sampled and the attrs the file lists.
struct OpenedEvents {
  EventSet events;
  perf::EventSpec spec;
  perf_event_attr sampling{};
  perf_event_attr sideband{};
};

// Opens the sampling and side-band events of `request` on every CPU, each
// ring waking its reader at a quarter full. `notice` hears of a PMU
// fallback (may be empty).
Result<OpenedEvents> open_events(EventRequest request,
                                 const std::function<void(std::string_view)>& notice);

// Turns a perf_event_open refusal into one line naming what is missing;
// `cpu_wide`: the refused event watches a whole CPU (pid -1).
Error explain_perf_open_error(Error error, bool cpu_wide);

}  // namespace bpfprof::record
