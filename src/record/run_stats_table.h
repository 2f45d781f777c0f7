// SPDX-License-Identifier: Apache-2.0
// Per-program run statistics while `record --bpf-stats` holds the kernel's
// BPF_STATS_RUN_TIME on: the first and the latest value read for every
// program. The enricher feeds it the values in the bpf_prog_info it reads at
// each PROG_LOAD and polls every loaded program periodically; a program that
// unloads keeps the last value polled before its unload.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "bpf/query.h"
#include "perfdata/enrichment_feature.h"

namespace bpfprof::record {

// Live programs are read this often, or less often where one pass over all
// loaded programs costs more than 1% of a CPU (kRunStatsPollCostFactor).
inline constexpr uint64_t kRunStatsPollNs = 100'000'000;
inline constexpr uint64_t kRunStatsPollCostFactor = 100;

class RunStatsTable {
 public:
  // A value read at `now` (CLOCK_MONOTONIC); `loaded_during`: the program's
  // PROG_LOAD came during the recording, so its counters began at 0.
  void saw(uint32_t id, uint64_t now, const bpf::RunStats& s, bool loaded_during);
  // Reads every loaded program (by id: a program unloaded meanwhile is
  // skipped). `at_end` marks the values as read when the recording ended.
  // Returns the number of programs read.
  size_t poll(bool at_end);
  // Takes `other`'s values: the earliest first, the latest last.
  void merge(const RunStatsTable& other);
  std::vector<perfdata::ProgramRunStats> entries() const;
  // For the file --switch-output started at `file_start_ns`, where
  // `at_switch` is the table as it was at that switch: each program's first
  // value becomes its last value then (its runs are the file's own), and a
  // program seen nothing new since (unloaded before the file) is left out.
  RunStatsTable since(const RunStatsTable& at_switch, uint64_t file_start_ns) const;
  bool empty() const { return by_id_.empty(); }

 private:
  void update(uint32_t id, uint64_t at, uint64_t run_cnt, uint64_t run_time_ns, uint32_t flags);
  std::map<uint32_t, perfdata::ProgramRunStats> by_id_;
};

}  // namespace bpfprof::record
