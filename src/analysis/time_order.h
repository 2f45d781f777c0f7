// SPDX-License-Identifier: Apache-2.0
// Samples in time order (file order among equal times) — the order of a
// stable sort by time — without a per-sample struct for the whole file:
//  - When pass 1 found that every sample respects perf's FINISHED_ROUND
//    contract (SampleOrder::by_rounds), samples wait, copied, only until the
//    round end that releases them: memory is about two rounds of samples.
//  - In a plain file that keeps the contract, script cuts the time axis into
//    windows at round limits instead (plan_time_windows): each window's
//    samples lie in a byte range known from pass 1's rounds, so windows are
//    read in place (through the mapping), sorted and formatted independently,
//    in parallel, and written one after the other.
//  - Otherwise, in a plain file, (time, file offset) pairs are sorted
//    (16 bytes per sample) and records are read back through the mapping.
//  - Otherwise (a COMPRESSED file breaking the contract: one zstd stream,
//    no random access), every sample is copied and sorted at the end; memory
//    then grows with the samples. perf files and ours keep the contract.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "base/error.h"
#include "base/prefault.h"
#include "perf/records.h"
#include "perfdata/reader.h"

namespace bpfprof::analysis {

class Session;  // analysis/session.h (which includes this header)

// A FINISHED_ROUND record: its file offset and the RoundClock limit right
// after it (limits never decrease from one round to the next).
struct RoundMark {
  uint64_t offset = 0;
  uint64_t limit = 0;
};

// What pass 1 learnt about the time order of samples, for `script`. perf's
// FINISHED_ROUND contract: when a round ends, every record up to the newest
// time seen before the previous round ended may be emitted (RoundClock).
struct SampleOrder {
  // No sample is older than a limit already passed: emitting at round ends
  // gives exactly the order of a stable sort by time.
  bool by_rounds = true;
  // Most samples waiting for a round end at once under that rule.
  uint64_t max_pending = 0;
  // Every FINISHED_ROUND, in file order (their offsets mean something in
  // plain files only: a COMPRESSED file has no record starts to seek to).
  std::vector<RoundMark> rounds;
  // The oldest and newest sample time in each round segment: segment j holds
  // the records between round end j and round end j + 1 (the data start for
  // j = 0, the data end after the last), so there is one more than rounds.
  // Untimed samples count as time 0; a segment without samples has min > max.
  struct SampleSpan {
    uint64_t min = UINT64_MAX, max = 0;
  };
  std::vector<SampleSpan> segments;
};

// The FINISHED_ROUND bookkeeping shared by pass 1 and script (same records,
// same limits): feed every timed record's time, call end_round() at each
// FINISHED_ROUND.
class RoundClock {
 public:
  void saw(uint64_t time) { newest_ = std::max(newest_, time); }
  // Returns the new limit: records at or before it may be emitted.
  uint64_t end_round() {
    limit_ = newest_at_round_;
    newest_at_round_ = newest_;
    return limit_;
  }
  uint64_t limit() const { return limit_; }

 private:
  uint64_t newest_ = 0, newest_at_round_ = 0, limit_ = 0;
};

// Copies of records, back to back. clear() keeps the capacity and growing
// does not zero the new bytes: a store refilled for every batch or round
// costs no allocation (and no page faults) once it has grown.
class RecordStore {
 public:
  // Copies `bytes` in; returns where they start (valid until clear()).
  size_t append(Bytes bytes) {
    if (capacity_ - size_ < bytes.size()) grow(bytes.size());
    const size_t at = size_;
    std::memcpy(data_.get() + at, bytes.data(), bytes.size());
    size_ += bytes.size();
    return at;
  }
  const std::byte* at(size_t offset) const { return data_.get() + offset; }
  size_t size() const { return size_; }
  void clear() { size_ = 0; }

 private:
  void grow(size_t more);

  std::unique_ptr<std::byte[]> data_;
  size_t size_ = 0, capacity_ = 0;
};

struct OrderedSample {
  perf::RecordView record;
  const perf::SampleLayout* layout = nullptr;
};

// Receives consecutive runs of samples in time order; the views are valid
// during the call only. An error stops the walk and is returned.
using OrderedBatchFn = std::function<Status(std::span<const OrderedSample>)>;

// Calls fn with batches of at most `batch` samples (the last may be smaller).
// Errors: fn's, or the data section failing to read again.
Status for_each_in_time_order(const Session& session, size_t batch, const OrderedBatchFn& fn);

// A slice of the time axis: the samples with first_time <= time <= last_time
// (untimed samples count as time 0), all of which start in file bytes
// [begin, end). Ranges of neighbouring windows overlap by a couple of rounds.
struct TimeWindow {
  uint64_t first_time = 0, last_time = 0;
  uint64_t begin = 0, end = 0;
  // This window's share of the data section for progress: the shares of all
  // windows are disjoint and sum to the data section's size.
  uint64_t progress_bytes = 0;
};

// Cuts the time axis at round limits into windows whose own bytes are about
// `target_bytes` each (at least one window; consecutive, disjoint, in time
// order). Valid only when every sample keeps the round contract
// (SampleOrder::by_rounds): a sample after round end j and before round end
// j + 1 has limit_j <= time <= limit_{j+2} (the newest time seen up to round
// end j + 1), so it is found between those round ends.
// `rounds`: FINISHED_ROUND marks in file order; data: [data_begin, data_end).
std::vector<TimeWindow> plan_time_windows(std::span<const RoundMark> rounds, uint64_t data_begin,
                                          uint64_t data_end, uint64_t target_bytes);
// Shrinks each window's byte range to the round segments that hold a sample
// of its time range (`segments`: SampleOrder::segments, one more than
// `rounds`), so that a window walks little of its neighbours' bytes; a window
// without samples gets an empty range. Progress shares stay as they were.
void narrow_time_windows(std::vector<TimeWindow>& windows, std::span<const RoundMark> rounds,
                         std::span<const SampleOrder::SampleSpan> segments, uint64_t data_begin,
                         uint64_t data_end);
// The windows of `session`, or none when they do not apply: a COMPRESSED file
// (no record starts to seek to), samples breaking the round contract, or
// rounds so large that a window would hold a large part of the file.
std::vector<TimeWindow> plan_time_windows(const Session& session, uint64_t target_bytes);

// One window's samples, in time order (file order among equal times). Reused
// from window to window: its buffers keep their capacity.
class WindowSamples {
 public:
  // Walks the window's byte range (counting its progress share) and keeps
  // the samples in its time range. Errors: a malformed record (the file
  // changed since pass 1).
  Status collect(const Session& session, const TimeWindow& window);
  // Views into the window's bytes (or into memory for inputs read whole),
  // valid until the next collect().
  std::span<const OrderedSample> samples() const { return out_; }

 private:
  struct Key {
    uint64_t time;
    uint64_t index;  // into kept_
  };
  // Sorts keys_ by (time, index).
  void sort_keys();

  // Large and refilled per window: grown in blocks mapped at once.
  template <class T>
  using Buffer = std::vector<T, PrefaultAllocator<T>>;
  Buffer<Key> keys_, scratch_;
  std::vector<size_t> runs_;    // where ascending runs of keys_ start, then its size
  Buffer<OrderedSample> kept_;  // in file order
  Buffer<OrderedSample> out_;
  perfdata::FileReader::HoldBytes hold_;  // the window's bytes; kept_ and out_ view them
};

}  // namespace bpfprof::analysis
