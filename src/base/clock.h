// SPDX-License-Identifier: Apache-2.0
// The one clock of the recorder side: CLOCK_MONOTONIC in nanoseconds, the
// clock the perf events are opened with (use_clockid), so a time read here
// and a record's time compare directly.
#pragma once

#include <time.h>

#include <cstdint>

namespace bpfprof {

inline uint64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace bpfprof
