// SPDX-License-Identifier: Apache-2.0
// Large buffers mapped in one call. A page touched for the first time is a
// page fault, and on a paravirtualized machine a fault costs ~11 us: a 1 MiB
// buffer filled page by page pays ~3 ms, one madvise(MADV_POPULATE_WRITE)
// a small part of that. Reports allocate such buffers per worker (a window's
// bytes, its samples, the script's line caches).
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>

namespace bpfprof {

// Buffers below this size are left to fault: for a few pages the call costs
// about what their faults do.
inline constexpr size_t kPrefaultMinBytes = size_t{64} << 10;

// Maps the whole pages inside [p, p + n) for writing, however few. Advice
// only: a kernel without MADV_POPULATE_WRITE (before 5.14) refuses it, and
// the pages fault in as they are touched, as without it.
inline void populate(void* p, size_t n) {
  constexpr uintptr_t kPage = 4096;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kPage - 1) & ~(kPage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) & ~(kPage - 1);
  if (end > begin)
    (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
}

// populate() for blocks of kPrefaultMinBytes and more.
inline void prefault(void* p, size_t n) {
  if (n >= kPrefaultMinBytes) populate(p, n);
}

// std::allocator whose large blocks are prefaulted before the container
// writes them (a vector's growth, its value-initialization). With `Zeroed`
// false, what a container grows by is left uninitialized (resize() writes
// nothing): for buffers filled at once after, such as a decompressor's
// output or a pread's.
template <class T, bool Zeroed = true>
struct PrefaultAllocator : std::allocator<T> {
  using value_type = T;
  PrefaultAllocator() = default;
  template <class U>
  PrefaultAllocator(const PrefaultAllocator<U, Zeroed>&) noexcept {}
  template <class U>
  struct rebind {
    using other = PrefaultAllocator<U, Zeroed>;
  };
  T* allocate(size_t n) {
    T* p = std::allocator<T>::allocate(n);
    prefault(p, n * sizeof(T));
    return p;
  }
  template <class U>
  requires(!Zeroed) void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U>
  bool operator==(const PrefaultAllocator<U, Zeroed>&) const noexcept {
    return true;
  }
};

template <class T>
using UninitAllocator = PrefaultAllocator<T, false>;

// Appends the n elements at p to v with one memcpy. Use it for bulk copies
// into vectors with the allocators above: vector::insert takes libstdc++'s
// memmove path only for std::allocator and copies these an element at a
// time (1.6 ms for a 0.7 MB blob). n == 0 copies nothing (an empty
// vector's data() may be null, and memcpy to null is undefined).
template <class Vec>
void append_bytes(Vec& v, const typename Vec::value_type* p, size_t n) {
  static_assert(std::is_trivially_copyable_v<typename Vec::value_type>);
  if (n == 0) return;
  const size_t at = v.size();
  v.resize(at + n);
  std::memcpy(v.data() + at, p, n * sizeof(typename Vec::value_type));
}

}  // namespace bpfprof
