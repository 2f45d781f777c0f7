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
  uint64_t lost = 0;           // sum of LOST.lost over sampling rings
  uint64_t lost_sideband = 0;  // sum of LOST.lost over side-band rings
  uint64_t lost_samples = 0;   // sum of LOST_SAMPLES.lost
  uint64_t throttles = 0;
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t repaired = 0;  // oversized KSYMBOL/BPF_EVENT records cut to size

  std::optional<uint64_t> first_sample_time, last_sample_time;
};

// The samples of one output file (--switch-output): its SAMPLE_TIME and the
// count a switch reports.
struct FileCounters {
  uint64_t samples = 0;
  std::optional<uint64_t> first_sample_time, last_sample_time;
};

// The size a side-band KSYMBOL or BPF_EVENT record really has. Kernels up to
// at least 6.18 grow the shared header.size of these two records by every
// earlier listener's sample_id size (perf_event_{ksymbol,bpf}_output never
// restore it), so a record may claim more bytes than it wrote: the fields,
// then its own trailer, then stale ring bytes. Other types: header.size.
uint16_t true_record_size(const perf::RecordView& r, size_t id_hdr_size);

// The rule of a pass's cut (RingCopier::copy's `until`): a record
// stamped later than `until` stays in its ring, with every record after it.
// A record without a time (none under this recorder's layout) goes.
inline bool past_cut(const perf::SampleLayout& layout, const perf::RecordView& r, uint64_t until) {
  const std::optional<uint64_t> t = layout.time_of(r);
  return t && *t > until;
}

// Where copied bytes go (the FileWriter in a recording, a vector in tests).
using RecordOutput = std::function<Status(Bytes)>;

class RingCopier {
 public:
  explicit RingCopier(const perf::SampleLayout& sample_layout) : layout_(sample_layout) {}

  // Copies what `ring` holds to `out` and consumes it. Returns the bytes copied.
  // A malformed record header is an error (the ring stays unconsumed from it).
  // With `until`, the copy stops before the first record stamped later than
  // it, which stays in the ring with all after it (DrainConfig says where
  // the passes cut).
  Result<size_t> copy(perf::RingBuffer& ring, bool sideband, const RecordOutput& out,
                      std::optional<uint64_t> until = std::nullopt);

  const DrainCounters& counters() const { return counters_; }
  const FileCounters& file_counters() const { return file_; }
  // A new output file starts: its counters from zero.
  void start_file() { file_ = {}; }

 private:
  // Scans headers of `c` (up to `until`), updating counters; returns the
  // bytes of whole records.
  Result<size_t> scan(const perf::RingBuffer::Chunk& c, bool sideband,
                      std::optional<uint64_t> until);
  // The record at `off` (copied into scratch_ if it wraps).
  perf::RecordView view_at(const perf::RingBuffer::Chunk& c, size_t off, uint16_t size);

  // A record to write cut down to `size` instead of its header's size.
  struct Repair {
    size_t offset;
    uint16_t header_size;
    uint16_t size;
  };
  void check_repair(const perf::RingBuffer::Chunk& c, size_t off, uint16_t size);
  Status emit(const perf::RingBuffer::Chunk& c, size_t from, size_t to, const RecordOutput& out);

  perf::SampleLayout layout_;
  DrainCounters counters_;
  FileCounters file_;
  std::vector<std::byte> scratch_;
  std::vector<Repair> repairs_;
};

}  // namespace bpfprof::record
