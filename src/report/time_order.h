// SPDX-License-Identifier: Apache-2.0
// Samples in time order (file order among equal times) — the order of a
// stable sort by time — without a per-sample struct for the whole file:
//  - When pass 1 found that every sample respects perf's FINISHED_ROUND
//    contract (SampleOrder::by_rounds), samples wait, copied, only until the
//    round end that releases them: memory is about two rounds of samples.
//  - Otherwise, in a plain file, (time, file offset) pairs are sorted
//    (16 bytes per sample) and records are read back through the mapping.
//  - Otherwise (a COMPRESSED file breaking the contract: one zstd stream,
//    no random access), every sample is copied and sorted at the end; memory
//    then grows with the samples. perf files and ours keep the contract.
#pragma once

#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <span>

#include "base/error.h"
#include "perf/records.h"
#include "report/session.h"

namespace bpfprof::report {

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

}  // namespace bpfprof::report
