// SPDX-License-Identifier: Apache-2.0
// SampleFilter: which samples pass 2 aggregates (export's --pid and --time,
// report's --pid and --comm).
// Samples left out are not in the Profile at all, so totals and percentages
// are of the kept samples.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/error.h"

namespace bpfprof::analysis {

class Session;

struct SampleFilter {
  std::optional<uint32_t> pid;
  // Inclusive bounds in absolute event-clock ns; none = open.
  std::optional<uint64_t> from_ns, to_ns;
  // The thread's comm at the sample's time; empty = any (checked by
  // aggregate, which names the thread).
  std::string comm;

  bool active() const { return pid || from_ns || to_ns || !comm.empty(); }
  bool keep(uint32_t sample_pid, uint64_t time) const {
    if (pid && sample_pid != *pid) return false;
    if (from_ns && time < *from_ns) return false;
    if (to_ns && time > *to_ns) return false;
    return true;
  }
};

// The earliest sample time of the recording, 0 if it has no timed sample.
// A walk over the samples reading only their time (file order is not time
// order: per-CPU buffers are drained in rounds).
Result<uint64_t> first_sample_time(const Session& session);

}  // namespace bpfprof::analysis
