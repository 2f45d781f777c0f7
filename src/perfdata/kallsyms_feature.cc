// SPDX-License-Identifier: Apache-2.0
// bpfprof's kallsyms snapshot section (feature 250): the kernel and module
// text symbols /proc/kallsyms listed when recording started, zstd-compressed
// (~5 MB of text becomes ~1 MB). perf skips feature numbers it does not know.
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "perfdata/features.h"

namespace bpfprof::perfdata {
namespace {

constexpr uint32_t kKallsymsVersion = 1;
constexpr uint32_t kStored = 0;
constexpr uint32_t kZstd = 1;
constexpr uint64_t kMaxRawSize = 256ull << 20;
// Level 1: 20 ms of CPU for a 5.4 MB snapshot against 37 ms at level 3, and
// no larger here (1.005 vs 1.012 MB; symbol lists favour the fast match finder).
constexpr int kLevel = 1;

struct DCtxFree {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};

}  // namespace

std::vector<std::byte> encode_kallsyms(const std::string& text) {
  std::vector<std::byte> out;
  append_pod(out, kKallsymsVersion);
  append_pod(out, kZstd);
  append_pod(out, static_cast<uint64_t>(text.size()));
  const size_t at = out.size();
  out.resize(at + ZSTD_compressBound(text.size()));
  const size_t n = ZSTD_compress(out.data() + at, out.size() - at, text.data(), text.size(), kLevel);
  if (ZSTD_isError(n)) {
    // Cannot happen with a compressBound-sized buffer; store it raw then.
    out.resize(at);
    std::memcpy(out.data() + 4, &kStored, sizeof kStored);
    const auto* p = reinterpret_cast<const std::byte*>(text.data());
    out.insert(out.end(), p, p + text.size());
    return out;
  }
  out.resize(at + n);
  return out;
}

Result<std::string> decode_kallsyms(Bytes section, uint64_t base_offset) {
  ByteCursor c(section, base_offset);
  BPFPROF_ASSIGN_OR_RETURN(uint32_t version, c.u32("KALLSYMS version"));
  BPFPROF_ASSIGN_OR_RETURN(uint32_t compression, c.u32("KALLSYMS compression"));
  BPFPROF_ASSIGN_OR_RETURN(uint64_t raw_size, c.u64("KALLSYMS raw_size"));
  if (version != kKallsymsVersion) {
    return make_error_at(Errc::kUnsupported, base_offset,
                         "KALLSYMS version " + std::to_string(version) + " (we read 1)");
  }
  if (raw_size > kMaxRawSize) {
    return make_error_at(Errc::kBadRecord, base_offset + 8,
                         "KALLSYMS raw_size " + std::to_string(raw_size) + " above 256 MiB");
  }
  const uint64_t body_at = c.absolute_pos();
  const Bytes body = section.subspan(c.pos());
  if (compression == kStored) {
    if (body.size() != raw_size) {
      return make_error_at(Errc::kBadRecord, body_at,
                           "KALLSYMS holds " + std::to_string(body.size()) + " bytes, raw_size " +
                               std::to_string(raw_size));
    }
    return std::string(reinterpret_cast<const char*>(body.data()), body.size());
  }
  if (compression != kZstd) {
    return make_error_at(Errc::kUnsupported, base_offset + 4,
                         "KALLSYMS compression " + std::to_string(compression));
  }
  std::unique_ptr<ZSTD_DCtx, DCtxFree> ctx(ZSTD_createDCtx());
  if (!ctx) return make_error(Errc::kInternal, "ZSTD_createDCtx failed");
  // Streamed through a fixed buffer into a string that grows with the real
  // output (no zero-filling, geometric growth), so a lying raw_size costs
  // nothing and extra output is caught one chunk past it.
  std::string out;
  out.reserve(static_cast<size_t>(std::min<uint64_t>(raw_size, 64ull << 20)));
  std::vector<char> buf(std::min<uint64_t>(raw_size, 1 << 20) + 1);  // +1: output beyond raw_size
  ZSTD_inBuffer in{body.data(), body.size(), 0};
  size_t ret = 1;
  while (in.pos < in.size || ret != 0) {
    ZSTD_outBuffer o{buf.data(), buf.size(), 0};
    ret = ZSTD_decompressStream(ctx.get(), &o, &in);
    if (ZSTD_isError(ret)) {
      return make_error_at(Errc::kBadRecord, body_at,
                           std::string("KALLSYMS zstd: ") + ZSTD_getErrorName(ret));
    }
    if (o.pos > raw_size - out.size()) {
      return make_error_at(Errc::kBadRecord, body_at,
                           "KALLSYMS decompresses beyond raw_size " + std::to_string(raw_size));
    }
    out.append(buf.data(), o.pos);
    if (o.pos == 0 && in.pos == in.size && ret != 0) {
      return make_error_at(Errc::kTruncated, body_at, "KALLSYMS zstd frame is incomplete");
    }
  }
  if (out.size() != raw_size) {
    return make_error_at(Errc::kBadRecord, body_at,
                         "KALLSYMS decompresses to " + std::to_string(out.size()) +
                             " bytes, raw_size says " + std::to_string(raw_size));
  }
  return out;
}

}  // namespace bpfprof::perfdata
