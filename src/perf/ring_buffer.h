// SPDX-License-Identifier: Apache-2.0
// The mmap'd perf ring buffer of one event: a metadata page followed by
// 2^n data pages. The consumer reads data_head with acquire semantics, copies
// out records (a record that wraps the end is copied whole into scratch) and
// publishes data_tail with release semantics, so the kernel never overwrites
// unread bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/byte_cursor.h"
#include "base/error.h"
#include "perf/records.h"

namespace bpfprof::perf {

class RingBuffer {
 public:
  // Maps `data_pages` (a power of two) data pages plus the metadata page of `fd`.
  static Result<RingBuffer> map(int fd, size_t data_pages);
  // A ring over caller-owned memory (tests): `meta` is a perf_event_mmap_page,
  // `data` the power-of-two data area. Nothing is unmapped on destruction.
  static RingBuffer over(void* meta, std::byte* data, size_t data_size);

  RingBuffer(RingBuffer&& other) noexcept;
  RingBuffer& operator=(RingBuffer&& other) noexcept;
  RingBuffer(const RingBuffer&) = delete;
  RingBuffer& operator=(const RingBuffer&) = delete;
  ~RingBuffer();

  // The unread bytes [tail, head) as at most two spans (second non-empty iff they
  // wrap the end). Loads head with acquire. Does not consume.
  struct Chunk {
    Bytes first;
    Bytes second;
    uint64_t tail = 0;  // ring position of first[0] (offsets in errors)
    size_t size() const { return first.size() + second.size(); }
  };
  Chunk peek() const;
  // Publishes tail += n (release).
  void consume(size_t n);

  // Calls fn(const RecordView&) for every complete record in [tail, head),
  // copying a record that wraps into scratch, then consumes them. The view is
  // valid only during the call. A header whose size is < 8 or larger than what
  // is available, or fewer than 8 stray bytes before head, is an error (the
  // ring is left unconsumed from that record on). Returns the bytes consumed.
  template <class Fn>
  Result<size_t> for_each_record(Fn&& fn);
  // The same without consuming: the records stay for whoever copies them.
  template <class Fn>
  Result<size_t> peek_each_record(Fn&& fn);

  size_t data_size() const { return data_size_; }

 private:
  RingBuffer() = default;
  // Next record at logical offset `off` from tail in chunk c; copies to scratch_ on wrap.
  Result<RecordView> record_in(const Chunk& c, size_t off);

  void* base_ = nullptr;   // mmap base (meta page), owned iff map_len_ != 0
  size_t map_len_ = 0;
  void* meta_ = nullptr;   // perf_event_mmap_page
  std::byte* data_ = nullptr;
  size_t data_size_ = 0;
  std::vector<std::byte> scratch_;
};

template <class Fn>
Result<size_t> RingBuffer::peek_each_record(Fn&& fn) {
  Chunk c = peek();
  size_t off = 0;
  const size_t total = c.size();
  while (off < total) {
    auto r = record_in(c, off);
    if (!r.ok()) return std::move(r).error();
    fn(*r);
    off += r->header.size;
  }
  return off;
}

template <class Fn>
Result<size_t> RingBuffer::for_each_record(Fn&& fn) {
  size_t off = 0;
  auto walked = peek_each_record([&](const RecordView& r) {
    fn(r);
    off += r.header.size;
  });
  consume(off);
  return walked;
}

}  // namespace bpfprof::perf
