// SPDX-License-Identifier: Apache-2.0
// The model behind `bpfprof top`: what one refresh interval measured
// (Interval, filled by LiveSession), and the rows the views show (Model),
// which outlive a single interval: run-count deltas need the previous
// reading, and a program that unloaded stays on screen, marked gone, for a
// few refreshes so that one which lived between two refreshes is seen at all.
// No kernel, no terminal here: unit tests feed intervals by hand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "symbols/symbolizer.h"

namespace bpfprof::top {

// One BPF program instance alive at some point of the interval.
struct ProgramSample {
  uint32_t id = 0;
  std::string name;
  std::string tag;       // 16 hex digits
  uint64_t samples = 0;  // samples whose leaf frame is in its code
  bool unloaded = false; // its PROG_UNLOAD was seen (in this interval or before)
  std::string owner = "[unknown]";  // as `report` names it: comm[pid] of the loader or holders
  // Where it is attached, as `report` names it (its sort key `attach`): every
  // point seen so far, sorted; `attach` joins them, or says "[none known]".
  std::vector<std::string> attach_points;
  std::string attach = "[unknown]";
  // Its total cost (docs/cost.md): self + callees + dispatch.
  uint64_t total_samples = 0;
};

// bpf_prog_info counters of a live program, read at the end of the interval.
struct RunReading {
  uint32_t id = 0;
  uint64_t run_cnt = 0;
  uint64_t run_time_ns = 0;
};

// A leaf symbol and its samples in the interval.
struct SymbolSample {
  std::string name;
  std::string dso;
  symbols::FrameKind kind = symbols::FrameKind::kUnknown;
  uint64_t samples = 0;
};

struct Interval {
  double seconds = 0;       // wall time the interval covered
  uint64_t samples = 0;     // every sample of the interval (the 100% of CPU%)
  uint64_t lost = 0;        // samples/records the kernel dropped in it
  std::vector<ProgramSample> programs;
  // Present when run-time statistics are on; then the absolute counters of
  // every program that was still loaded when the interval ended.
  std::optional<std::vector<RunReading>> runs;
  std::vector<SymbolSample> symbols;
};

// kCpu sorts by the total (TOTAL%), then the self share (CPU%).
enum class SortKey { kCpu, kRuns, kAvgNs };
// Cycles CPU% -> runs/s -> avg ns -> CPU%.
SortKey next_sort_key(SortKey key);
const char* sort_key_name(SortKey key);

// One row of the program table: one instance, or (the default) every
// instance of the same code — name and tag — shown together as `report`
// groups them: `ids` every instance's (sorted), `id` the lowest; samples,
// shares, runs and rates summed, avg ns over the runs of all; owners and
// attach points of all; gone when every instance is.
struct ProgramRow {
  uint32_t id = 0;
  std::vector<uint32_t> ids;
  std::string name;
  std::string tag;
  std::string owner;
  std::vector<std::string> attach_points;
  std::string attach;
  uint64_t samples = 0;            // self: leaf in its code
  double cpu_percent = 0;          // of all samples of the last interval
  uint64_t total_samples = 0;      // self + callees + dispatch (docs/cost.md)
  double total_percent = 0;        // of all samples of the last interval
  // Runs in the last interval and their average cost; none without stats or
  // without a previous reading (first refresh, program gone).
  std::optional<uint64_t> runs;
  std::optional<double> runs_per_s;
  std::optional<double> avg_ns;
  std::optional<uint64_t> run_time_ns;  // of those runs
  bool gone = false;
  unsigned gone_refreshes = 0;     // refreshes since it was first seen gone (0 = this one)
};

struct SymbolRow {
  std::string name;
  std::string dso;
  symbols::FrameKind kind = symbols::FrameKind::kUnknown;
  uint64_t samples = 0;
  double cpu_percent = 0;
};

class Model {
 public:
  // A gone program is shown in `keep_gone` refreshes (the one it went in
  // included), then dropped.
  explicit Model(unsigned keep_gone = 3) : keep_gone_(keep_gone) {}

  // Run counters read when statistics were turned on: the first interval's
  // runs are counted from these (the kernel never resets run_cnt, so an
  // earlier user of the statistics left counts behind).
  void set_baseline(const std::vector<RunReading>& readings);
  // Takes the next interval. Programs not mentioned in it are gone. A program
  // without an earlier reading loaded while statistics were on: its counters
  // started at zero.
  void update(const Interval& interval);

  // The program table, sorted by `key` (descending; ties by CPU%, then id):
  // instances of the same code grouped into one row, or with `instances`
  // one row each. A zero tag tells no code apart: such a row stays its own.
  std::vector<ProgramRow> programs(SortKey key, bool instances = false) const;
  // The hottest leaf symbols of the last interval, at most `limit`;
  // `bpf_only` keeps BPF code (program functions, trampolines, dispatchers).
  std::vector<SymbolRow> symbols(bool bpf_only, size_t limit) const;

  const Interval& last() const { return last_; }
  bool has_run_stats() const { return last_.runs.has_value(); }
  uint64_t refreshes() const { return refreshes_; }

 private:
  struct Program {
    ProgramRow row;
    std::optional<RunReading> reading;  // the previous one
    bool seen = false;                  // mentioned in the current update
  };

  unsigned keep_gone_;
  uint64_t refreshes_ = 0;
  std::map<uint32_t, RunReading> baseline_;
  Interval last_;
  std::map<uint32_t, Program> programs_;
};

}  // namespace bpfprof::top
