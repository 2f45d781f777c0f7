// SPDX-License-Identifier: Apache-2.0
// The hot path of recording: copies every available record from a set of
// rings to the output as raw bytes, counting samples and losses from record
// headers only (no full parses), and tracking first/last sample time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "base/byte_cursor.h"
#include "base/error.h"
#include "perf/records.h"
#include "perf/ring_buffer.h"

namespace bpfprof::record {

struct DrainCounters {
  uint64_t samples = 0;
  uint64_t lost = 0;            // sum of LOST.lost over sampling rings
  uint64_t lost_sideband = 0;   // sum of LOST.lost over side-band rings
  uint64_t lost_samples = 0;    // sum of LOST_SAMPLES.lost
  uint64_t throttles = 0;
  uint64_t records = 0;
  uint64_t bytes = 0;
  std::optional<uint64_t> first_sample_time, last_sample_time;
};

// Where copied bytes go (the FileWriter in a recording, a vector in tests).
using RecordOutput = std::function<Status(Bytes)>;

class RingCopier {
 public:
  explicit RingCopier(const perf::SampleLayout& sample_layout) : layout_(sample_layout) {}

  // Copies what `ring` holds to `out` and consumes it. Returns the bytes copied.
  // A malformed record header is an error (the ring stays unconsumed from it).
  Result<size_t> copy(perf::RingBuffer& ring, bool sideband, const RecordOutput& out);

  const DrainCounters& counters() const { return counters_; }

 private:
  // Scans headers of `c`, updating counters; returns the bytes of whole records.
  Result<size_t> scan(const perf::RingBuffer::Chunk& c, bool sideband);
  std::optional<uint64_t> sample_time_at(const perf::RingBuffer::Chunk& c, size_t off,
                                         uint16_t size);

  perf::SampleLayout layout_;
  DrainCounters counters_;
  std::vector<std::byte> scratch_;
};

}  // namespace bpfprof::record
