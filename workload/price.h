// SPDX-License-Identifier: Apache-2.0
// The price of a BPF program (--price): a getppid() loop taxed by a
// map-heavy program — 16 hash-map updates per call, for this process only —
// attached at raw_syscalls:sys_enter through a perf event (the perf-event
// tracepoint path, PERF_EVENT_IOC_SET_BPF) or as a raw tracepoint
// (BPF_RAW_TRACEPOINT_OPEN); or, with no program, the perf event alone (the
// hook's machinery runs, no program is there to pay for it). bench/price.sh
// compares what detaching saves with bpfprof's Total; the kernel tests check
// where each sample is charged.
#pragma once

#include <cstdint>
#include <string>

#include "base/error.h"

namespace bpfprof::workload {

struct PriceOptions {
  std::string hook;      // "tracepoint", "raw_tp" or "perf_only"
  uint64_t ops = 1000000;  // getppid() calls per round
  // 0: one attached run. N: N rounds of detached then attached (A/B).
  unsigned rounds = 0;
  // Processes doing the same at once (each its own program, same hook).
  unsigned processes = 1;
};

// Prints "detached_ns <cpu ns per call>" and "attached_ns <...>" lines.
// tracefs must be mounted at /sys/kernel/tracing (tracepoint, perf_only).
Status run_price(const PriceOptions& options);

}  // namespace bpfprof::workload
