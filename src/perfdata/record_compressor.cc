// SPDX-License-Identifier: Apache-2.0
#include "perfdata/record_compressor.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "perf/abi.h"
#include "perfdata/file_format.h"

namespace bpfprof::perfdata {
namespace {

constexpr size_t kHeader = sizeof(perf_event_header);

// The most input whose worst-case zstd output still fits one payload.
size_t largest_batch() {
  size_t n = kMaxCompressedPayload;
  while (n > 0 && ZSTD_compressBound(n) > kMaxCompressedPayload) n -= 64;
  return n;
}

}  // namespace

Result<std::unique_ptr<RecordCompressor>> RecordCompressor::create(int level, uint32_t mmap_len) {
  if (level < 1 || level > ZSTD_maxCLevel()) {
    return make_error(Errc::kInvalidArgument, "zstd level " + std::to_string(level) +
                                                  " is not in 1.." +
                                                  std::to_string(ZSTD_maxCLevel()));
  }
  std::unique_ptr<RecordCompressor> c(new RecordCompressor());
  c->cctx_.reset(ZSTD_createCCtx());
  if (!c->cctx_) return make_error(Errc::kInternal, "ZSTD_createCCtx failed");
  const size_t set = ZSTD_CCtx_setParameter(c->cctx_.get(), ZSTD_c_compressionLevel, level);
  if (ZSTD_isError(set)) {
    return make_error(Errc::kInternal, std::string("zstd level: ") + ZSTD_getErrorName(set));
  }
  c->level_ = level;
  c->mmap_len_ = mmap_len;
  c->batch_ = std::min<size_t>(largest_batch(), mmap_len);
  return c;
}

void RecordCompressor::add(Bytes bytes) {
  pending_.insert(pending_.end(), bytes.begin(), bytes.end());
}

Status RecordCompressor::compress_batch(Bytes batch, std::vector<std::byte>& out) {
  const size_t at = out.size();
  out.resize(at + kHeader + kMaxCompressedPayload);
  ZSTD_outBuffer o{out.data() + at + kHeader, kMaxCompressedPayload, 0};
  ZSTD_inBuffer in{batch.data(), batch.size(), 0};
  const size_t left = ZSTD_compressStream2(cctx_.get(), &o, &in, ZSTD_e_flush);
  if (ZSTD_isError(left) || left != 0 || in.pos != in.size) {
    out.resize(at);
    return make_error(Errc::kInternal,
                      std::string("zstd: ") + (ZSTD_isError(left) ? ZSTD_getErrorName(left)
                                                                  : "output exceeds one record"));
  }
  perf_event_header h{perf::kRecordCompressed, 0, static_cast<uint16_t>(kHeader + o.pos)};
  std::memcpy(out.data() + at, &h, sizeof h);
  out.resize(at + kHeader + o.pos);
  bytes_in_ += batch.size();
  bytes_out_ += kHeader + o.pos;
  records_out_++;
  return ok_status();
}

Status RecordCompressor::take(std::vector<std::byte>& out, bool all) {
  const size_t total = pending_.size();
  size_t pos = 0;
  for (;;) {
    if (!all && total - pos < batch_) break;
    // Whole records from pos, up to the batch limit.
    size_t end = pos;
    while (total - end >= kHeader) {
      const auto h = load_unaligned<perf_event_header>(pending_.data() + end);
      if (h.size < kHeader) {
        return make_error(Errc::kInternal,
                          "record of size " + std::to_string(h.size) + " handed to the compressor");
      }
      if (h.size > total - end || end - pos + h.size > batch_) break;
      end += h.size;
    }
    if (end > pos) {
      BPFPROF_TRY(compress_batch(Bytes(pending_.data() + pos, end - pos), out));
      pos = end;
      continue;
    }
    if (total - pos < kHeader) break;
    const auto h = load_unaligned<perf_event_header>(pending_.data() + pos);
    if (h.size > total - pos) break;  // the rest of it is still to come
    // Larger than a batch: perf reads it uncompressed between COMPRESSED ones.
    out.insert(out.end(), pending_.begin() + static_cast<long>(pos),
               pending_.begin() + static_cast<long>(pos + h.size));
    pos += h.size;
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<long>(pos));
  if (all && !pending_.empty()) {
    return make_error(Errc::kInternal, "a round ends inside a record (" +
                                           std::to_string(pending_.size()) + " bytes pending)");
  }
  return ok_status();
}

Compression RecordCompressor::feature() const {
  Compression c;
  c.version = 0;  // perf record leaves it 0 (measured with perf 6.1)
  c.type = kCompZstd;
  c.level = static_cast<uint32_t>(level_);
  c.ratio = bytes_out_ ? static_cast<uint32_t>(
                             static_cast<double>(bytes_in_) / static_cast<double>(bytes_out_) + 0.5)
                       : 0;
  c.mmap_len = mmap_len_;
  return c;
}

}  // namespace bpfprof::perfdata
