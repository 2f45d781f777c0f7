// SPDX-License-Identifier: Apache-2.0
#include "report/sample_filter.h"

#include "report/session.h"

namespace bpfprof::report {

Result<uint64_t> first_sample_time(const Session& session) {
  // Reads each sample's time at its attr's precomputed offset: no parsing,
  // no symbolization. Pass 1 already proved the data section readable.
  const perfdata::FileReader& reader = session.reader();
  uint64_t first = 0;
  BPFPROF_TRY(reader.for_each_record([&](const perf::RecordView& r, uint64_t) {
    if (r.header.type != perf::kRecordSample) return;
    const perfdata::FileAttr* attr = reader.attr_for(r);
    if (attr == nullptr) return;
    std::optional<uint64_t> t = attr->layout.time_of(r);
    if (t && *t != 0 && (first == 0 || *t < first)) first = *t;
  }));
  return first;
}

}  // namespace bpfprof::report
