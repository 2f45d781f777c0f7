// SPDX-License-Identifier: Apache-2.0
#include "export/gzip.h"

#include <zlib.h>

namespace bpfprof::exporter {
namespace {

// zlib's windowBits: 15 (32 KiB window) + 16 selects gzip framing on output;
// + 32 detects gzip or zlib framing on input.
constexpr int kGzipWrite = 15 + 16;
constexpr int kAutoRead = 15 + 32;
constexpr size_t kChunk = 64 * 1024;

Error zlib_error(const char* what, const z_stream& zs, int rc) {
  std::string why = zs.msg != nullptr ? zs.msg : "zlib error " + std::to_string(rc);
  return make_error(Errc::kBadRecord, std::string(what) + ": " + why);
}

}  // namespace

Result<std::string> gzip_compress(std::string_view data) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, kGzipWrite, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    return make_error(Errc::kInternal, "gzip: deflateInit2 failed");
  }
  std::string out;
  out.resize(deflateBound(&zs, data.size()));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  // deflateBound leaves room for the whole stream: one Z_FINISH call ends it.
  int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return make_error(Errc::kInternal, "gzip: deflate did not finish");
  return out;
}

Result<std::string> gzip_decompress(std::string_view data) {
  z_stream zs{};
  if (inflateInit2(&zs, kAutoRead) != Z_OK) {
    return make_error(Errc::kInternal, "gunzip: inflateInit2 failed");
  }
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  std::string out;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    size_t at = out.size();
    out.resize(at + kChunk);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + at);
    zs.avail_out = static_cast<uInt>(kChunk);
    rc = inflate(&zs, Z_NO_FLUSH);
    out.resize(at + kChunk - zs.avail_out);
    if (rc == Z_STREAM_END) break;
    const bool starved = rc == Z_BUF_ERROR || (rc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0);
    if (rc != Z_OK || starved) {
      Error e = starved ? make_error(Errc::kTruncated, "gunzip: stream ends early")
                        : zlib_error("gunzip", zs, rc);
      inflateEnd(&zs);
      return e;
    }
  }
  inflateEnd(&zs);
  return out;
}

}  // namespace bpfprof::exporter
