// SPDX-License-Identifier: Apache-2.0
// bpfprof's enrichment sections: how the recorder enriched BPF programs
// (feature 251) and the kernel's run statistics per program (feature 252).
// Both start with a version and the size of one entry, so a reader accepts
// entries that later versions extend (fields it does not know are skipped).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/byte_cursor.h"
#include "base/error.h"

namespace bpfprof::perfdata {

// How the enricher ran: its scheduling policy is the one lever user space
// has on how fast it reacts to a PROG_LOAD.
enum class EnricherSched : uint32_t {
  kOther = 0,      // SCHED_OTHER at the default nice level
  kOtherNice = 1,  // SCHED_OTHER, nice -20 (SCHED_FIFO was refused)
  kFifo = 2,       // SCHED_FIFO
};
enum class EnrichmentPath : uint32_t {
  kUserSpace = 0,  // a thread woken on BPF_EVENT takes a reference by id
  kInKernel = 1,   // captured in the kernel at BPF_PROG_LOAD exit (record/capture.h)
};

// One program the recording knows: synthesized at start or loaded during it.
struct EnrichedProgramEntry {
  static constexpr uint32_t kSynthesized = 1;  // loaded before recording began
  static constexpr uint32_t kStored = 2;       // BPF_PROG_INFO holds it
  static constexpr uint32_t kGone = 4;         // unloaded before a reference was taken
  static constexpr uint32_t kCaptured = 8;     // captured in the kernel at load
  static constexpr uint32_t kById = 16;        // capture active, but enriched by id
  uint32_t id = 0;
  uint32_t flags = 0;
  uint64_t load_ns = 0;      // the PROG_LOAD's time (0: synthesized)
  uint64_t acquired_ns = 0;  // when the reference was taken or found gone (0: synthesized)
  uint64_t hold_ns = 0;      // how long the reference was held (the unload it delayed)
  bool has(uint32_t f) const { return (flags & f) != 0; }
};

struct EnrichmentSection {
  EnrichmentPath path = EnrichmentPath::kUserSpace;
  EnricherSched sched = EnricherSched::kOther;
  // The in-kernel capture: 0 it ran, an errno where it could not, -1 not
  // tried (--enrich=user). In version 1 files: the answer of a probe for a
  // tracing program on the unload path, never used.
  int32_t in_kernel_errno = -1;
  uint16_t threads = 0;  // enricher threads (0: not recorded)
  bool pinned = false;   // one per CPU, each bound to its CPU
  uint64_t lost = 0;    // LOST records in the enricher's own rings
  uint64_t errors = 0;  // info reads that failed other than "gone"
  // Version 2 on (version 1 files: 0, "", and `version` 1).
  uint64_t capture_lost = 0;    // capture records the BPF ring could not take
  std::string capture_refused;  // one line: why the capture did not run ("" when it did)
  uint32_t version = 2;         // as read (what is written is always the latest)
  std::vector<EnrichedProgramEntry> programs;
  size_t count(uint32_t flag) const;
};

// One program's run statistics: the first and last value the recorder read.
struct ProgramRunStats {
  static constexpr uint32_t kLoadedDuring = 1;  // counters began at 0 during the recording
  static constexpr uint32_t kReadAtEnd = 2;     // still loaded: `last` was read at the end
  uint32_t id = 0;
  uint32_t flags = 0;
  uint64_t first_ns = 0, first_run_cnt = 0, first_run_time_ns = 0;
  uint64_t last_ns = 0, last_run_cnt = 0, last_run_time_ns = 0;
  bool has(uint32_t f) const { return (flags & f) != 0; }
  // Whether the values cover the program's runs: false for a program read
  // only at its load and unloaded before any later read.
  bool measured() const;
  // Runs during the recording (last minus the start value: 0 for programs loaded during it).
  uint64_t run_cnt() const;
  uint64_t run_time_ns() const;
};

struct RunStatsSection {
  uint64_t poll_interval_ns = 0;  // live programs were read at most this often
  uint64_t enabled_ns = 0;        // CLOCK_MONOTONIC when the statistics were turned on
  uint64_t disabled_ns = 0;       // ... and off
  std::vector<ProgramRunStats> programs;
};

std::vector<std::byte> encode_enrichment(const EnrichmentSection& s);
Result<EnrichmentSection> decode_enrichment(Bytes section, uint64_t base_offset);
std::vector<std::byte> encode_run_stats(const RunStatsSection& s);
Result<RunStatsSection> decode_run_stats(Bytes section, uint64_t base_offset);

// "SCHED_FIFO", "SCHED_OTHER, nice -20", "SCHED_OTHER".
const char* sched_name(EnricherSched s);

}  // namespace bpfprof::perfdata
