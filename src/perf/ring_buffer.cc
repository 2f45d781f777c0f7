// SPDX-License-Identifier: Apache-2.0
// RingBuffer: the consumer side of the kernel's perf ring (perf_event_mmap_page
// protocol in include/uapi/linux/perf_event.h): acquire-load data_head, read,
// release-store data_tail.
#include "perf/ring_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

namespace bpfprof::perf {
namespace {

bool is_power_of_two(size_t n) { return n != 0 && (n & (n - 1)) == 0; }

perf_event_mmap_page* meta_page(void* p) { return static_cast<perf_event_mmap_page*>(p); }

// Copies n bytes starting `off` bytes into the logical concatenation first+second.
void copy_out(const RingBuffer::Chunk& c, size_t off, std::byte* dst, size_t n) {
  if (off < c.first.size()) {
    const size_t k = std::min(n, c.first.size() - off);
    std::memcpy(dst, c.first.data() + off, k);
    dst += k;
    n -= k;
    off = c.first.size();
  }
  if (n != 0) std::memcpy(dst, c.second.data() + (off - c.first.size()), n);
}

}  // namespace

Result<RingBuffer> RingBuffer::map(int fd, size_t data_pages) {
  if (!is_power_of_two(data_pages)) {
    return make_error(Errc::kInvalidArgument,
                      "ring buffer size must be a power of two pages, got " +
                          std::to_string(data_pages));
  }
  const long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) return make_sys_error("sysconf(_SC_PAGESIZE)", errno);
  const size_t page_size = static_cast<size_t>(page);
  if (data_pages > SIZE_MAX / page_size - 1) {
    return make_error(Errc::kInvalidArgument,
                      "ring buffer of " + std::to_string(data_pages) + " pages is too large");
  }
  const size_t len = (data_pages + 1) * page_size;
  // Writable so that we can publish data_tail; the kernel then never overwrites
  // bytes we have not consumed.
  void* base = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    return make_sys_error("mmap perf ring buffer (fd " + std::to_string(fd) + ", " +
                              std::to_string(data_pages) + " data pages)",
                          errno);
  }
  RingBuffer rb;
  rb.base_ = base;
  rb.map_len_ = len;
  rb.meta_ = base;
  rb.data_ = static_cast<std::byte*>(base) + page_size;
  rb.data_size_ = data_pages * page_size;
  return rb;
}

RingBuffer RingBuffer::over(void* meta, std::byte* data, size_t data_size) {
  BPFPROF_CHECK(meta != nullptr && data != nullptr && is_power_of_two(data_size));
  RingBuffer rb;
  rb.meta_ = meta;
  rb.data_ = data;
  rb.data_size_ = data_size;
  return rb;
}

RingBuffer::RingBuffer(RingBuffer&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      map_len_(std::exchange(other.map_len_, 0)),
      meta_(std::exchange(other.meta_, nullptr)),
      data_(std::exchange(other.data_, nullptr)),
      data_size_(std::exchange(other.data_size_, 0)),
      scratch_(std::move(other.scratch_)) {}

RingBuffer& RingBuffer::operator=(RingBuffer&& other) noexcept {
  if (this != &other) {
    if (map_len_ != 0) ::munmap(base_, map_len_);
    base_ = std::exchange(other.base_, nullptr);
    map_len_ = std::exchange(other.map_len_, 0);
    meta_ = std::exchange(other.meta_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    data_size_ = std::exchange(other.data_size_, 0);
    scratch_ = std::move(other.scratch_);
  }
  return *this;
}

RingBuffer::~RingBuffer() {
  if (map_len_ != 0) ::munmap(base_, map_len_);
}

RingBuffer::Chunk RingBuffer::peek() const {
  perf_event_mmap_page* m = meta_page(meta_);
  // Acquire pairs with the kernel's store of data_head after it wrote the
  // records, so the bytes below head are visible.
  const uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
  // Only we write data_tail.
  const uint64_t tail = __atomic_load_n(&m->data_tail, __ATOMIC_RELAXED);
  // The kernel never publishes more than one ring ahead of a writable tail; a
  // larger distance is a corrupt meta page. Clamping keeps every read inside
  // the ring, and the record walk then reports the first bad header.
  const size_t avail = static_cast<size_t>(std::min<uint64_t>(head - tail, data_size_));
  Chunk c;
  c.tail = tail;
  if (avail == 0) return c;
  const size_t start = static_cast<size_t>(tail & (data_size_ - 1));
  const size_t first = std::min(avail, data_size_ - start);
  c.first = Bytes(data_ + start, first);
  c.second = Bytes(data_, avail - first);
  return c;
}

void RingBuffer::consume(size_t n) {
  if (n == 0) return;
  perf_event_mmap_page* m = meta_page(meta_);
  const uint64_t tail = __atomic_load_n(&m->data_tail, __ATOMIC_RELAXED);
  // Release: our reads of the consumed bytes happen before the kernel may
  // overwrite them.
  __atomic_store_n(&m->data_tail, tail + n, __ATOMIC_RELEASE);
}

Result<RecordView> RingBuffer::record_in(const Chunk& c, size_t off) {
  const size_t avail = c.size() - off;
  const uint64_t pos = c.tail + off;
  if (avail < sizeof(RecordHeader)) {
    return make_error_at(Errc::kBadRecord, pos,
                         "ring: " + std::to_string(avail) +
                             " stray bytes before data_head (less than a record header)");
  }
  RecordView r;
  r.offset = pos;
  copy_out(c, off, reinterpret_cast<std::byte*>(&r.header), sizeof(RecordHeader));
  if (r.header.size < sizeof(RecordHeader) || r.header.size > avail) {
    return make_error_at(Errc::kBadRecord, pos,
                         "ring: record of type " + std::to_string(r.header.type) + " has size " +
                             std::to_string(r.header.size) + ", " + std::to_string(avail) +
                             " bytes available");
  }
  const size_t n = r.header.size;
  if (off + n <= c.first.size()) {
    r.bytes = c.first.subspan(off, n);
  } else if (off >= c.first.size()) {
    r.bytes = c.second.subspan(off - c.first.size(), n);
  } else {
    // The record wraps the end of the ring: hand out one contiguous copy.
    scratch_.resize(n);
    copy_out(c, off, scratch_.data(), n);
    r.bytes = Bytes(scratch_.data(), n);
  }
  return r;
}

}  // namespace bpfprof::perf
