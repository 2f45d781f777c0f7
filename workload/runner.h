// SPDX-License-Identifier: Apache-2.0
// The workload's schedules: churn (short-lived programs on worker threads plus
// one long-lived program), hold (one program until a signal) and probe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "workload/program.h"

namespace bpfprof::workload {

// What the command line asked for.
struct Options {
  uint32_t programs = 20;                            // short-lived burners
  std::vector<uint64_t> lifetimes_ns = {200'000'000};  // cycled through, in job order
  uint32_t subprog_programs = 2;                     // short-lived bpf2bpf programs
  uint64_t long_lived_extra_ns = 1'000'000'000;      // long-lived outlives the rest by this
  uint32_t threads = 1;
  double rate = 0;  // program loads per second in total; 0 = unlimited
  uint64_t seed = 0;  // 0 keeps the job order; others shuffle it and seed the packets
  bool quiet = false;
  uint32_t burn_iters = kDefaultBurnIters;
};

// "200ms", "1.5s", "100us", "5000ns" -> nanoseconds.
Result<uint64_t> parse_duration(std::string_view text);

// Loads, runs and unloads every program the options ask for; returns each
// program's truth once all are unloaded. Stops early (keeping what ran) when
// `stop` becomes true.
Result<std::vector<ProgramTruth>> run_churn(const Options& options, const std::atomic<bool>& stop);

// Loads one long-lived burner, calls on_ready(id), runs it until `stop`,
// then unloads it.
Result<ProgramTruth> run_hold(const Options& options, const std::atomic<bool>& stop,
                              const std::function<void(uint32_t id)>& on_ready);

// Loads and test-runs one tiny program: does BPF work here? Returns its id.
Result<uint32_t> run_probe();

}  // namespace bpfprof::workload
