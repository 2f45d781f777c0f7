// SPDX-License-Identifier: Apache-2.0
// The enricher: a thread with its own per-CPU side-band events (BPF_EVENT
// only, woken on every record, not written to the file). On PROG_LOAD it takes
// a reference to the program by id at once, reads bpf_prog_info and BTF, and
// drops the reference immediately: holding it would keep an unloaded
// program's JIT image alive and delay its PROG_UNLOAD.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "bpf/prog_info.h"
#include "perf/records.h"
#include "record/event_set.h"

namespace bpfprof::record {

// One PROG_LOAD the enricher saw, with CLOCK_MONOTONIC times.
struct EnrichedProgram {
  uint32_t id = 0;
  uint64_t load_time_ns = 0;    // the BPF_EVENT's timestamp
  uint64_t acquired_ns = 0;     // just before taking the reference
  uint64_t released_ns = 0;     // just after closing it (0 if never taken)
  bool gone = false;            // unloaded before the reference was taken
  bool enriched = false;        // info read
  uint64_t hold_ns() const { return released_ns > acquired_ns ? released_ns - acquired_ns : 0; }
};

struct EnrichmentStats {
  std::vector<EnrichedProgram> programs;  // in the order their PROG_LOADs were read
  uint64_t lost = 0;                      // LOST records in the enricher's rings
  uint64_t errors = 0;                    // info/BTF reads that failed for other reasons
  size_t gone() const;
  size_t enriched() const;
  uint64_t median_hold_ns() const;
  uint64_t max_hold_ns() const;
};

class Enricher {
 public:
  // Opens the events on `cpus` (live from open on) and starts the thread.
  static Result<std::unique_ptr<Enricher>> start(const std::vector<int>& cpus,
                                                 uint64_t sample_type, uint32_t pages);
  ~Enricher();
  Enricher(const Enricher&) = delete;
  Enricher& operator=(const Enricher&) = delete;

  // Drains the rings one last time and joins the thread. Idempotent.
  void stop();

  // After stop(): what was collected.
  const EnrichmentStats& stats() const { return stats_; }
  std::map<uint32_t, bpf::ProgInfo>& infos() { return infos_; }
  std::map<uint32_t, bpf::BtfBlob>& btfs() { return btfs_; }

 private:
  Enricher() = default;
  void run();
  void drain();
  void on_prog_load(uint32_t id, uint64_t time);

  std::vector<CpuRing> rings_;
  perf::SampleLayout layout_;
  UniqueFd stop_fd_;   // eventfd: written by stop()
  UniqueFd epoll_fd_;
  std::thread thread_;
  bool stopped_ = false;

  // Owned by the thread until stop() has joined it.
  EnrichmentStats stats_;
  std::map<uint32_t, bpf::ProgInfo> infos_;
  std::map<uint32_t, bpf::BtfBlob> btfs_;
  std::set<uint32_t> btf_missing_;
};

uint64_t monotonic_ns();

}  // namespace bpfprof::record
