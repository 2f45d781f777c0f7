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
#include <functional>
#include <span>

#include "base/error.h"
#include "perf/records.h"
#include "report/session.h"

namespace bpfprof::report {

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
