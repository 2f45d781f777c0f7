// SPDX-License-Identifier: Apache-2.0
// In-stream features: what the recorder learns (host, arch, event names, the
// kallsyms snapshot, BPF_PROG_INFO / BPF_BTF entries) written into the data
// section as it learns it, so a file whose recorder was killed before the
// feature sections were written still carries everything.
//
// Carrier: perf's record type 65 (PERF_RECORD_HEADER_EVENT_TYPE), deprecated
// and skipped without a word by perf 6.1's report and script in file and
// pipe mode (measured: docs/files.md, "Written as it is learned"). A record
// of ours:
//    0 perf_event_header { type 65, misc 0, size (multiple of 8) }
//    8 u64 magic "BPFPROF1"        (an old perf's own type-65 record has none)
//   16 u32 feature number          (the feature section it stands for)
//   20 u32 reserved (0)
//   24 u64 blob size               (the whole feature payload)
//   32 u64 offset of this chunk in the blob
//   40 chunk bytes, zero padded to 8
// A blob is exactly the payload the feature section would hold; records
// larger than a record can be are cut into chunks written back to back.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "base/byte_cursor.h"
#include "base/error.h"
#include "base/prefault.h"
#include "perf/records.h"

namespace bpfprof::perfdata {

inline constexpr uint32_t kRecordInStream = 65;
inline constexpr uint64_t kInStreamMagic = 0x3146'4f52'5046'5042ULL;  // "BPFPROF1"
inline constexpr size_t kInStreamHeaderSize = 40;

// Appends the records carrying `payload` of feature `feat` to `out`.
void append_in_stream_records(std::vector<std::byte>& out, int feat, Bytes payload);

// Whether `r` is one of our records (type 65 with the magic).
bool is_in_stream(const perf::RecordView& r);

// Reassembles blobs from records fed in file order.
class InStreamCollector {
 public:
  // A blob's bytes, mapped in one call when its size is reserved (the
  // kallsyms snapshot's 0.7 MB faulted page by page cost ~180 faults, ~2 ms
  // of a 1 s recording's report), and grown without zeroing: each chunk is
  // copied in with one memcpy.
  using BlobBytes = std::vector<std::byte, UninitAllocator<std::byte>>;
  struct Blob {
    int feat = 0;
    BlobBytes bytes;
    uint64_t at = 0;  // file offset of its first record
  };
  // A record of ours. A chunk that does not continue the blob being
  // assembled is an error naming its offset (the partial blob is dropped,
  // and the chunks after it that belong to it too, without more errors).
  Status add(const perf::RecordView& r);
  // Blobs completed so far, in file order; a blob still incomplete is
  // reported by finish().
  std::vector<Blob>& blobs() { return blobs_; }
  Status finish();
  // Features a damaged or incomplete blob was dropped from.
  const std::set<int>& dropped() const { return dropped_; }

 private:
  std::vector<Blob> blobs_;
  Blob partial_;
  uint64_t partial_size_ = 0;
  bool assembling_ = false;
  bool skipping_ = false;  // after a damaged chunk, until the next blob starts
  std::set<int> dropped_;
};

}  // namespace bpfprof::perfdata
