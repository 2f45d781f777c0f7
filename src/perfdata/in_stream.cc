// SPDX-License-Identifier: Apache-2.0
#include "perfdata/in_stream.h"

#include <algorithm>
#include <string>

namespace bpfprof::perfdata {
namespace {

constexpr size_t kMaxRecord = 65535 / 8 * 8;
constexpr size_t kMaxChunk = kMaxRecord - kInStreamHeaderSize;
// The largest blob a reader assembles (a kallsyms snapshot is a few MB).
constexpr uint64_t kMaxBlob = uint64_t{1} << 30;

}  // namespace

void append_in_stream_records(std::vector<std::byte>& out, int feat, Bytes payload) {
  uint64_t offset = 0;
  do {
    const size_t chunk = std::min<size_t>(kMaxChunk, payload.size() - offset);
    const size_t size = (kInStreamHeaderSize + chunk + 7) / 8 * 8;
    perf_event_header h{kRecordInStream, 0, static_cast<uint16_t>(size)};
    append_pod(out, h);
    append_pod(out, kInStreamMagic);
    append_pod(out, static_cast<uint32_t>(feat));
    append_pod(out, uint32_t{0});
    append_pod(out, static_cast<uint64_t>(payload.size()));
    append_pod(out, offset);
    out.insert(out.end(), payload.begin() + static_cast<ptrdiff_t>(offset),
               payload.begin() + static_cast<ptrdiff_t>(offset + chunk));
    out.resize(out.size() + (size - kInStreamHeaderSize - chunk));
    offset += chunk;
  } while (offset < payload.size());
}

bool is_in_stream(const perf::RecordView& r) {
  return r.header.type == kRecordInStream && r.bytes.size() >= kInStreamHeaderSize &&
         load_unaligned<uint64_t>(r.bytes.data() + 8) == kInStreamMagic;
}

Status InStreamCollector::add(const perf::RecordView& r) {
  const Bytes b = r.bytes;
  const uint32_t feat = load_unaligned<uint32_t>(b.data() + 16);
  const uint64_t size = load_unaligned<uint64_t>(b.data() + 24);
  const uint64_t offset = load_unaligned<uint64_t>(b.data() + 32);
  const Bytes chunk = b.subspan(kInStreamHeaderSize);
  auto bad = [&](const std::string& why) -> Status {
    dropped_.insert(assembling_ ? partial_.feat : static_cast<int>(feat));
    assembling_ = false;
    partial_ = {};
    // The rest of a damaged blob's chunks are dropped with it, unreported:
    // one damaged record is one error.
    skipping_ = true;
    return make_error_at(Errc::kBadRecord, r.offset,
                         "in-stream feature " + std::to_string(feat) + ": " + why);
  };
  Status earlier = ok_status();
  if (offset != 0 && skipping_ && !assembling_) return ok_status();
  skipping_ = false;
  if (offset == 0) {
    // A blob still open here was cut short; the new one still counts.
    if (assembling_) earlier = finish();
    if (feat == 0 || feat >= 256) return bad("not a feature number");
    if (size > kMaxBlob) return bad("blob of " + std::to_string(size) + " bytes");
    assembling_ = true;
    partial_ = Blob{static_cast<int>(feat), {}, r.offset};
    partial_size_ = size;
    // Room for the whole blob (chunks of < 64 KiB each), not regrown and
    // copied as they come; a size that lies reserves 64 MiB at most, and
    // only the chunks that really come fill it.
    partial_.bytes.reserve(static_cast<size_t>(std::min<uint64_t>(size, uint64_t{64} << 20)));
  } else if (!assembling_ || static_cast<int>(feat) != partial_.feat || size != partial_size_ ||
             offset != partial_.bytes.size()) {
    return bad("chunk at " + std::to_string(offset) + " does not continue a blob");
  }
  // The chunk holds what the blob still lacks, at most, plus < 8 bytes of padding.
  const uint64_t want = std::min<uint64_t>(chunk.size(), partial_size_ - partial_.bytes.size());
  if (chunk.size() - want >= 8) return bad("chunk larger than its blob");
  append_bytes(partial_.bytes, chunk.data(), static_cast<size_t>(want));
  if (partial_.bytes.size() == partial_size_) {
    blobs_.push_back(std::move(partial_));
    partial_ = {};
    assembling_ = false;
  }
  return earlier;
}

Status InStreamCollector::finish() {
  if (!assembling_) return ok_status();
  dropped_.insert(partial_.feat);
  return make_error_at(Errc::kTruncated, partial_.at,
                       "in-stream feature " + std::to_string(partial_.feat) + " ends after " +
                           std::to_string(partial_.bytes.size()) + " of " +
                           std::to_string(partial_size_) + " bytes");
}

}  // namespace bpfprof::perfdata
