// SPDX-License-Identifier: Apache-2.0
// `record -z`: whole records packed into PERF_RECORD_COMPRESSED (81) records
// of one zstd stream, as perf record -z writes them (perf-data-format.md 6.1).
// Stricter than perf so that every perf reader takes them: a COMPRESSED
// record holds only whole records (none straddles two), decompresses to at
// most the mmap_len the file states (feature 27), and its payload fits a u16
// record size. Each one ends with a zstd flush: the stream goes on (its
// history keeps the ratio), yet what is written so far decodes whole.
#pragma once

#include <zstd.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "base/byte_cursor.h"
#include "base/error.h"
#include "perfdata/features.h"

namespace bpfprof::perfdata {

// perf's bound on one COMPRESSED record's payload: 65535 - 8 - 1.
inline constexpr size_t kMaxCompressedPayload = 65526;

class RecordCompressor {
 public:
  // `level` 1..22 (zstd); `mmap_len` is what feature 27 will state.
  static Result<std::unique_ptr<RecordCompressor>> create(int level, uint32_t mmap_len);

  // Records to compress, as byte spans: a span may end inside a record (a
  // ring that wrapped), the next one continues it.
  void add(Bytes bytes);
  // Moves pending whole records into COMPRESSED records appended to `out`:
  // with `all`, every pending record (a round ends: nothing may be left
  // inside a record), else only as many full batches as are pending. A
  // record too large for one COMPRESSED record is appended as it is.
  Status take(std::vector<std::byte>& out, bool all);
  bool empty() const { return pending_.empty(); }

  // Feature 27 as perf writes it: version 0, zstd, the level, the ratio of
  // record bytes in to COMPRESSED bytes out (rounded), mmap_len.
  Compression feature() const;
  // Input bytes a COMPRESSED record carries at most.
  size_t batch_limit() const { return batch_; }
  uint64_t bytes_in() const { return bytes_in_; }
  uint64_t bytes_out() const { return bytes_out_; }
  uint64_t records_out() const { return records_out_; }

 private:
  struct CCtxFree {
    void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
  };
  RecordCompressor() = default;
  Status compress_batch(Bytes batch, std::vector<std::byte>& out);

  std::unique_ptr<ZSTD_CCtx, CCtxFree> cctx_;
  int level_ = 1;
  uint32_t mmap_len_ = 0;
  size_t batch_ = 0;
  std::vector<std::byte> pending_;
  uint64_t bytes_in_ = 0, bytes_out_ = 0, records_out_ = 0;
};

}  // namespace bpfprof::perfdata
