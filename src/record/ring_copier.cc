// SPDX-License-Identifier: Apache-2.0
#include "record/ring_copier.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "perf/abi.h"

namespace bpfprof::record {
namespace {

// Copies n bytes at logical offset `off` of a chunk that may wrap.
void copy_out(const perf::RingBuffer::Chunk& c, size_t off, size_t n, std::byte* dst) {
  if (off < c.first.size()) {
    size_t k = std::min(n, c.first.size() - off);
    std::memcpy(dst, c.first.data() + off, k);
    dst += k;
    n -= k;
    off = 0;
  } else {
    off -= c.first.size();
  }
  if (n) std::memcpy(dst, c.second.data() + off, n);
}

template <class T>
T load_at(const perf::RingBuffer::Chunk& c, size_t off) {
  if (off + sizeof(T) <= c.first.size()) return load_unaligned<T>(c.first.data() + off);
  T v;
  copy_out(c, off, sizeof(T), reinterpret_cast<std::byte*>(&v));
  return v;
}

}  // namespace

std::optional<uint64_t> RingCopier::sample_time_at(const perf::RingBuffer::Chunk& c, size_t off,
                                                   uint16_t size) {
  perf::RecordView view;
  view.header = load_at<perf::RecordHeader>(c, off);
  if (off + size <= c.first.size()) {
    view.bytes = c.first.subspan(off, size);
  } else {
    scratch_.resize(size);
    copy_out(c, off, size, scratch_.data());
    view.bytes = Bytes(scratch_.data(), size);
  }
  return layout_.time_of(view);
}

Result<size_t> RingCopier::scan(const perf::RingBuffer::Chunk& c, bool sideband) {
  const size_t total = c.size();
  size_t off = 0;
  size_t first_sample = SIZE_MAX, last_sample = SIZE_MAX;
  uint16_t first_size = 0, last_size = 0;
  while (total - off >= sizeof(perf::RecordHeader)) {
    const auto h = load_at<perf::RecordHeader>(c, off);
    if (h.size < sizeof(perf::RecordHeader) || h.size > total - off) {
      return make_error_at(Errc::kBadRecord, c.tail + off,
                           fmt::format("ring record of type {} has size {} ({} bytes left)",
                                       h.type, h.size, total - off));
    }
    switch (h.type) {
      case perf::kRecordSample:
        counters_.samples++;
        if (first_sample == SIZE_MAX) {
          first_sample = off;
          first_size = h.size;
        }
        last_sample = off;
        last_size = h.size;
        break;
      case perf::kRecordLost:
        if (h.size >= 24) (sideband ? counters_.lost_sideband : counters_.lost) += load_at<uint64_t>(c, off + 16);
        break;
      case perf::kRecordLostSamples:
        if (h.size >= 16) counters_.lost_samples += load_at<uint64_t>(c, off + 8);
        break;
      case perf::kRecordThrottle:
        counters_.throttles++;
        break;
      default:
        break;
    }
    counters_.records++;
    off += h.size;
  }
  // Samples within one ring are in time order, so its first and last bound it.
  if (first_sample != SIZE_MAX) {
    if (auto t = sample_time_at(c, first_sample, first_size)) {
      if (!counters_.first_sample_time || *t < *counters_.first_sample_time) {
        counters_.first_sample_time = *t;
      }
    }
    if (auto t = sample_time_at(c, last_sample, last_size)) {
      if (!counters_.last_sample_time || *t > *counters_.last_sample_time) {
        counters_.last_sample_time = *t;
      }
    }
  }
  return off;
}

Result<size_t> RingCopier::copy(perf::RingBuffer& ring, bool sideband, const RecordOutput& out) {
  const perf::RingBuffer::Chunk c = ring.peek();
  if (c.size() == 0) return size_t{0};
  auto scanned = scan(c, sideband);
  if (!scanned.ok()) return std::move(scanned).error();
  const size_t n = *scanned;
  const size_t in_first = std::min(n, c.first.size());
  if (in_first) BPFPROF_TRY(out(c.first.first(in_first)));
  if (n > in_first) BPFPROF_TRY(out(c.second.first(n - in_first)));
  ring.consume(n);
  counters_.bytes += n;
  return n;
}

}  // namespace bpfprof::record
