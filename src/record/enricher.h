// SPDX-License-Identifier: Apache-2.0
// The enricher: threads with their own per-CPU side-band events (BPF_EVENT
// only, woken on every record, not written to the file). On PROG_LOAD a
// thread takes a reference to the program by id at once, reads bpf_prog_info
// and BTF, and drops the reference: holding it would keep an unloaded
// program's JIT image alive and delay its PROG_UNLOAD.
//
// The race it runs against is the program's lifetime: once the last fd
// closes, the id is gone. So by default there is a thread per CPU, pinned
// there and reading that CPU's ring, running SCHED_FIFO where allowed: the
// wakeup preempts the loader on its own CPU instead of waiting for a time
// slice. A thread takes every reference of a batch before reading any info
// and looks at its rings again between two info reads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/error.h"
#include "base/unique_fd.h"
#include "bpf/prog_info.h"
#include "perf/records.h"
#include "perfdata/enrichment_feature.h"
#include "record/event_set.h"
#include "record/run_stats_table.h"

namespace bpfprof::record {

// One PROG_LOAD the enricher saw, with CLOCK_MONOTONIC times.
struct EnrichedProgram {
  uint32_t id = 0;
  uint64_t load_time_ns = 0;    // the BPF_EVENT's timestamp
  uint64_t acquired_ns = 0;     // just before taking the reference
  uint64_t released_ns = 0;     // just after closing it (0 if never taken)
  bool gone = false;            // unloaded before the reference was taken
  bool enriched = false;        // info read
  bool captured = false;        // captured in the kernel at load (no reference)
  bool by_id = false;           // with capture active: not captured, enriched by id
  uint64_t hold_ns() const { return released_ns > acquired_ns ? released_ns - acquired_ns : 0; }
};

struct EnrichmentStats {
  std::vector<EnrichedProgram> programs;  // by the time their reference was taken
  uint64_t lost = 0;                      // LOST records in the enricher's rings
  uint64_t errors = 0;                    // info/BTF reads that failed for other reasons
  perfdata::EnricherSched sched = perfdata::EnricherSched::kOther;  // what every thread got
  size_t threads = 0;
  bool pinned = false;                    // one thread per CPU, bound to it
  // The in-kernel capture served the recording (CaptureEnricher); else the
  // user-space enricher did, and `capture_refused` says why capture did not.
  bool in_kernel = false;
  std::string capture_refused;
  int capture_errno = -1;                 // 0 used, -1 not tried, else its errno
  uint64_t capture_lost = 0;              // capture records the ring could not take
  size_t gone() const;
  size_t enriched() const;
  size_t captured() const;
  size_t by_id() const;
  uint64_t median_hold_ns() const;
  uint64_t max_hold_ns() const;
};

struct EnricherConfig {
  std::vector<int> cpus;  // every online CPU: a PROG_LOAD is reported where it ran
  uint64_t sample_type = 0;
  uint32_t pages = 16;
  // The policy to ask for; refusals fall back (FIFO -> nice -20 -> default).
  perfdata::EnricherSched sched = perfdata::EnricherSched::kFifo;
  // One thread per CPU, each bound to its CPU's ring and pinned there: the
  // PROG_LOAD wakes the thread on the CPU that loaded the program, and under
  // SCHED_FIFO it runs before the loader does again, so the reference is
  // taken before the loader can close its fd. Else one unpinned thread for
  // all rings, which must wait for a CPU (bench/RESULTS.md measures both).
  bool per_cpu = true;
  bool run_stats = false;  // poll every program's run statistics (--bpf-stats)
  // Open the rings and react to PROG_LOADs. False while the in-kernel capture
  // serves the recording: then the enricher only polls run statistics.
  bool watch_loads = true;
  uint64_t poll_interval_ns = kRunStatsPollNs;
};

class Enricher {
 public:
  // Opens the events on every CPU (live from open on) and starts the threads.
  static Result<std::unique_ptr<Enricher>> start(const EnricherConfig& config);
  ~Enricher();
  Enricher(const Enricher&) = delete;
  Enricher& operator=(const Enricher&) = delete;

  // Drains the rings one last time, joins the threads and, with run
  // statistics, reads every still-loaded program once more. Idempotent.
  void stop();

  // While running: copies of the infos and BTF read since the last call,
  // for the file's in-stream records (thread-safe against the workers).
  void take_learned(std::vector<bpf::ProgInfo>& infos, std::vector<bpf::BtfBlob>& btfs);

  // While running (thread-safe against the workers), or after stop(): what
  // was collected so far, for a file closed by --switch-output.
  EnrichmentStats stats_so_far() const;
  RunStatsTable run_stats_so_far() const;

  // After stop(): what was collected.
  const EnrichmentStats& stats() const { return stats_; }
  std::map<uint32_t, bpf::ProgInfo>& infos() { return infos_; }
  std::map<uint32_t, bpf::BtfBlob>& btfs() { return btfs_; }
  const RunStatsTable& run_stats() const { return run_stats_; }

 private:
  struct Worker;
  Enricher() = default;
  // The workers' figures, each read under its lock.
  EnrichmentStats gather_stats() const;
  RunStatsTable gather_run_stats() const;

  std::vector<std::unique_ptr<Worker>> workers_;
  UniqueFd stop_fd_;  // eventfd written by stop(); every worker's epoll watches it
  bool stopped_ = false;
  EnricherConfig config_;

  // Filled by stop() from the workers.
  EnrichmentStats stats_;
  std::map<uint32_t, bpf::ProgInfo> infos_;
  std::map<uint32_t, bpf::BtfBlob> btfs_;
  RunStatsTable run_stats_;
};

// The file's enrichment section: the programs synthesized at start, then
// every PROG_LOAD the enricher (or the capture) saw; `stored`: ids
// BPF_PROG_INFO holds.
perfdata::EnrichmentSection enrichment_section(const EnrichmentStats& stats,
                                               const std::vector<uint32_t>& synthesized,
                                               const std::set<uint32_t>& stored);

}  // namespace bpfprof::record
