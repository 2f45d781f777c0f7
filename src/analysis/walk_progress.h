// SPDX-License-Identifier: Apache-2.0
// WalkProgress: how far the walks over one recording's data section got, for a
// progress line that another thread draws. Session updates it only where it
// already does per-window work (every few MiB, where it drops the pages behind
// the walk) and when a walk ends, so the per-record path pays nothing. All
// fields are relaxed atomics: a reader sees each value, not one snapshot.
#pragma once

#include <atomic>
#include <cstdint>

namespace bpfprof::analysis {

struct WalkProgress {
  // Size of the data section; set when pass 1 starts.
  std::atomic<uint64_t> total_bytes{0};
  // 0 until the file is open, 1 during pass 1; the caller counts later walks
  // (pass 2, a --time pre-walk) with next_pass().
  std::atomic<uint32_t> pass{0};
  // Data-section bytes walked in this pass, summed over the walking threads.
  std::atomic<uint64_t> bytes{0};
  // Samples and lost events pass 1 has counted so far (its totals afterwards).
  std::atomic<uint64_t> samples{0}, lost{0};

  // Pass 1 of a file whose data section spans `total` bytes starts.
  void begin_file(uint64_t total) {
    total_bytes.store(total, std::memory_order_relaxed);
    bytes.store(0, std::memory_order_relaxed);
    samples.store(0, std::memory_order_relaxed);
    lost.store(0, std::memory_order_relaxed);
    pass.store(1, std::memory_order_relaxed);
  }
  // Another walk over the same file starts.
  void next_pass() {
    bytes.store(0, std::memory_order_relaxed);
    pass.fetch_add(1, std::memory_order_relaxed);
  }
  void add_bytes(uint64_t n) { bytes.fetch_add(n, std::memory_order_relaxed); }
  // Pass 1 has counted this many more samples and lost events (threads
  // walking parts of the file each add theirs).
  void add_found(uint64_t more_samples, uint64_t more_lost) {
    samples.fetch_add(more_samples, std::memory_order_relaxed);
    lost.fetch_add(more_lost, std::memory_order_relaxed);
  }
};

}  // namespace bpfprof::analysis
