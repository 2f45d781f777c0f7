// SPDX-License-Identifier: Apache-2.0
#include "analysis/sample_filter.h"

#include "analysis/session.h"

namespace bpfprof::analysis {

Result<uint64_t> first_sample_time(const Session& session) {
  // Reads each sample's time at its attr's precomputed offset: no parsing,
  // no symbolization; the walk drops the pages behind it like pass 2.
  uint64_t first = 0;
  BPFPROF_TRY(session.for_each_sample(
      0, session.chunk_count(), [&](const perf::RecordView& r, const perf::SampleLayout& layout) {
        std::optional<uint64_t> t = layout.time_of(r);
        if (t && *t != 0 && (first == 0 || *t < first)) first = *t;
      }));
  return first;
}

}  // namespace bpfprof::analysis
