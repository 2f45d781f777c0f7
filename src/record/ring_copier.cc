// SPDX-License-Identifier: Apache-2.0
#include "record/ring_copier.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

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

uint16_t true_record_size(const perf::RecordView& r, size_t id_hdr_size) {
  const size_t have = r.bytes.size();
  size_t fixed = 0;
  if (r.header.type == perf::kRecordBpfEvent) {
    fixed = 24;
  } else if (r.header.type == perf::kRecordKsymbol) {
    if (have < 24) return r.header.size;
    const char* name = reinterpret_cast<const char*>(r.bytes.data() + 24);
    const size_t len = strnlen(name, have - 24);
    fixed = 24 + ((len + 1 + 7) & ~size_t{7});
  } else {
    return r.header.size;
  }
  const size_t size = fixed + id_hdr_size;
  return size < have ? static_cast<uint16_t>(size) : r.header.size;
}

void RingCopier::check_repair(const perf::RingBuffer::Chunk& c, size_t off, uint16_t size) {
  perf::RecordView view;
  view.header = load_at<perf::RecordHeader>(c, off);
  scratch_.resize(size);
  copy_out(c, off, size, scratch_.data());
  view.bytes = Bytes(scratch_.data(), size);
  const uint16_t fixed = true_record_size(view, layout_.id_hdr_size());
  if (fixed < size) repairs_.push_back({off, size, fixed});
}

perf::RecordView RingCopier::view_at(const perf::RingBuffer::Chunk& c, size_t off, uint16_t size) {
  perf::RecordView view;
  view.header = load_at<perf::RecordHeader>(c, off);
  if (off + size <= c.first.size()) {
    view.bytes = c.first.subspan(off, size);
  } else {
    scratch_.resize(size);
    copy_out(c, off, size, scratch_.data());
    view.bytes = Bytes(scratch_.data(), size);
  }
  return view;
}

Result<size_t> RingCopier::scan(const perf::RingBuffer::Chunk& c, bool sideband,
                                std::optional<uint64_t> until) {
  const size_t total = c.size();
  size_t off = 0;
  size_t first_sample = SIZE_MAX, last_sample = SIZE_MAX;
  uint16_t first_size = 0, last_size = 0;
  while (total - off >= sizeof(perf::RecordHeader)) {
    const auto h = load_at<perf::RecordHeader>(c, off);
    if (h.size < sizeof(perf::RecordHeader) || h.size > total - off) {
      return make_error_at(Errc::kBadRecord, c.tail + off,
                           fmt::format("ring record of type {} has size {} ({} bytes left)", h.type,
                                       h.size, total - off));
    }
    if (until && past_cut(layout_, view_at(c, off, h.size), *until)) break;
    switch (h.type) {
      case perf::kRecordSample:
        counters_.samples++;
        file_.samples++;
        if (first_sample == SIZE_MAX) {
          first_sample = off;
          first_size = h.size;
        }
        last_sample = off;
        last_size = h.size;
        break;
      case perf::kRecordLost:
        if (h.size >= 24)
          (sideband ? counters_.lost_sideband : counters_.lost) += load_at<uint64_t>(c, off + 16);
        break;
      case perf::kRecordLostSamples:
        if (h.size >= 16) counters_.lost_samples += load_at<uint64_t>(c, off + 8);
        break;
      case perf::kRecordThrottle:
        counters_.throttles++;
        break;
      case perf::kRecordKsymbol:
      case perf::kRecordBpfEvent:
        if (sideband) check_repair(c, off, h.size);
        break;
      default:
        break;
    }
    counters_.records++;
    off += h.size;
  }
  // Samples within one ring are in time order, so its first and last bound it.
  if (first_sample != SIZE_MAX) {
    auto widen = [](std::optional<uint64_t>& first, std::optional<uint64_t>& last,
                    std::optional<uint64_t> f, std::optional<uint64_t> l) {
      if (f && (!first || *f < *first)) first = f;
      if (l && (!last || *l > *last)) last = l;
    };
    const auto f = layout_.time_of(view_at(c, first_sample, first_size));
    const auto l = layout_.time_of(view_at(c, last_sample, last_size));
    widen(counters_.first_sample_time, counters_.last_sample_time, f, l);
    widen(file_.first_sample_time, file_.last_sample_time, f, l);
  }
  return off;
}

Status RingCopier::emit(const perf::RingBuffer::Chunk& c, size_t from, size_t to,
                        const RecordOutput& out) {
  const size_t split = c.first.size();
  if (from < split) {
    const size_t end = std::min(to, split);
    if (end > from) BPFPROF_TRY(out(c.first.subspan(from, end - from)));
    from = end;
  }
  if (to > from) BPFPROF_TRY(out(c.second.subspan(from - split, to - from)));
  return ok_status();
}

Result<size_t> RingCopier::copy(perf::RingBuffer& ring, bool sideband, const RecordOutput& out,
                                std::optional<uint64_t> until) {
  const perf::RingBuffer::Chunk c = ring.peek();
  if (c.size() == 0) return size_t{0};
  repairs_.clear();
  auto scanned = scan(c, sideband, until);
  if (!scanned.ok()) return std::move(scanned).error();
  const size_t n = *scanned;
  // Whole spans go out as they are; only repaired records are rewritten.
  size_t pos = 0;
  for (const Repair& r : repairs_) {
    BPFPROF_TRY(emit(c, pos, r.offset, out));
    scratch_.resize(r.size);
    copy_out(c, r.offset, r.size, scratch_.data());
    std::memcpy(scratch_.data() + 6, &r.size, sizeof r.size);
    BPFPROF_TRY(out(Bytes(scratch_.data(), r.size)));
    pos = r.offset + r.header_size;
    counters_.repaired++;
  }
  BPFPROF_TRY(emit(c, pos, n, out));
  ring.consume(n);
  counters_.bytes += n;
  return n;
}

}  // namespace bpfprof::record
