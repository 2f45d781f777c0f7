// SPDX-License-Identifier: Apache-2.0
// Fast text for script's lines: a buffer written through a raw pointer and
// the field writers (strings, padding, decimal and hex numbers) that fill it
// with plain stores.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

#include "base/prefault.h"

namespace bpfprof::script {

// Text of many lines, written through a raw pointer: a line reserves room
// for its longest form, writes its fields with plain stores and commits what
// it used. Growing does not zero the new bytes, and clear() keeps the
// capacity, so a buffer refilled for every batch costs no allocation.
class TextBuffer {
 public:
  // At least `n` writable bytes at the returned pointer, until commit().
  char* reserve(size_t n) {
    if (capacity_ - size_ < n) grow(n);
    return data_.get() + size_;
  }
  // Keeps the bytes written from reserve()'s pointer up to `end`.
  void commit(char* end) { size_ = static_cast<size_t>(end - data_.get()); }
  void append(std::string_view s) {
    if (s.empty()) return;  // a buffer never grown has no pointer to copy to
    char* p = reserve(s.size());
    std::memcpy(p, s.data(), s.size());
    commit(p + s.size());
  }
  const char* data() const { return data_.get(); }
  size_t size() const { return size_; }
  void clear() { size_ = 0; }

 private:
  void grow(size_t more) {
    const size_t capacity = std::max({size_ + more, 2 * capacity_, size_t{1} << 16});
    auto data = std::make_unique_for_overwrite<char[]>(capacity);
    prefault(data.get(), capacity);
    if (size_ > 0) std::memcpy(data.get(), data_.get(), size_);
    data_ = std::move(data);
    capacity_ = capacity;
  }

  std::unique_ptr<char[]> data_;
  size_t size_ = 0, capacity_ = 0;
};

// Field writers: each writes at p and returns the end. Padding and hex
// numbers write a whole 16-byte block and keep what they need (the next field
// overwrites the rest), so a caller reserves kPad bytes more than its fields
// use.
constexpr unsigned kPad = 16;
constexpr char kSpaces[kPad + 1] = "                ";
constexpr char kZeros[kPad + 1] = "0000000000000000";

template <size_t N>
[[gnu::always_inline]] inline char* put(char* p, const char (&literal)[N]) {
  std::memcpy(p, literal, N - 1);
  return p + N - 1;
}

// Names are short: up to 32 bytes go as two fixed-size copies that may
// overlap (never reading outside `s`), longer ones through memcpy.
[[gnu::always_inline]] inline char* put(char* p, std::string_view s) {
  const size_t n = s.size();
  const char* src = s.data();
  if (n >= 16 && n <= 32) {
    std::memcpy(p, src, 16);
    std::memcpy(p + n - 16, src + n - 16, 16);
  } else if (n >= 8 && n < 16) {
    std::memcpy(p, src, 8);
    std::memcpy(p + n - 8, src + n - 8, 8);
  } else if (n >= 4 && n < 8) {
    std::memcpy(p, src, 4);
    std::memcpy(p + n - 4, src + n - 4, 4);
  } else if (n > 0 && n < 4) {
    p[0] = src[0];
    p[n / 2] = src[n / 2];
    p[n - 1] = src[n - 1];
  } else if (n > 32) {
    std::memcpy(p, src, n);
  }
  return p + n;
}

// `n` (<= kPad) copies of `fill` (' ' or '0').
[[gnu::always_inline]] inline char* put_pad(char* p, unsigned n, char fill) {
  std::memcpy(p, fill == '0' ? kZeros : kSpaces, kPad);
  return p + n;
}

[[gnu::always_inline]] inline unsigned decimal_digits(uint64_t v) {
  unsigned n = 1;
  for (;;) {
    if (v < 10) return n;
    if (v < 100) return n + 1;
    if (v < 1000) return n + 2;
    if (v < 10000) return n + 3;
    v /= 10000;
    n += 4;
  }
}

// The `n` decimal digits of `v` at p, two at a time from the right.
[[gnu::always_inline]] inline char* put_digits(char* p, uint64_t v, unsigned n) {
  static constexpr char kPairs[] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
      "8081828384858687888990919293949596979899";
  char* end = p + n;
  char* q = end;
  while (v >= 100) {
    q -= 2;
    std::memcpy(q, kPairs + 2 * (v % 100), 2);
    v /= 100;
  }
  if (v >= 10) {
    q -= 2;
    std::memcpy(q, kPairs + 2 * v, 2);
  } else {
    *--q = static_cast<char>('0' + v);
  }
  return end;
}

// `v` in decimal, padded with `fill` on the left to `width` <= kPad (right
// alignment), or with spaces on the right when `left`.
[[gnu::always_inline]] inline char* put_uint(char* p, uint64_t v, unsigned width = 0,
                                             char fill = ' ', bool left = false) {
  const unsigned n = decimal_digits(v);
  if (!left && n < width) p = put_pad(p, width - n, fill);
  p = put_digits(p, v, n);
  if (left && n < width) p = put_pad(p, width - n, ' ');
  return p;
}

// `v` in decimal with its sign, padded with spaces like put_uint.
[[gnu::always_inline]] inline char* put_int(char* p, int64_t v, unsigned width = 0,
                                            bool left = false) {
  if (v >= 0) return put_uint(p, static_cast<uint64_t>(v), width, ' ', left);
  const uint64_t m = uint64_t{0} - static_cast<uint64_t>(v);
  const unsigned n = decimal_digits(m) + 1;
  if (!left && n < width) p = put_pad(p, width - n, ' ');
  *p++ = '-';
  p = put_digits(p, m, n - 1);
  if (left && n < width) p = put_pad(p, width - n, ' ');
  return p;
}

// The 8 nibbles of `x` as 8 hex digits, most significant first in memory
// order: nibbles spread one per byte, turned to ASCII a word at a time.
inline uint64_t hex_digits8(uint32_t x) {
  uint64_t y = x;
  y = (y | (y << 16)) & 0x0000FFFF0000FFFFull;
  y = (y | (y << 8)) & 0x00FF00FF00FF00FFull;
  y = (y | (y << 4)) & 0x0F0F0F0F0F0F0F0Full;  // byte i holds nibble i
  // 1 in the bytes whose nibble is 10..15 (no byte carries into the next).
  const uint64_t letters = ((y + 0x0606060606060606ull) >> 4) & 0x0101010101010101ull;
  y += 0x3030303030303030ull + letters * ('a' - '0' - 10);
  return __builtin_bswap64(y);
}

// `v` in lowercase hex, padded with spaces on the left to `width` <= kPad.
// Writes 8 or 16 bytes whatever the length (the next field overwrites the rest).
// The 16 digits are shifted into place in registers: copying them out of a
// stack array at a varying offset stalled on store forwarding.
[[gnu::always_inline]] inline char* put_hex(char* p, uint64_t v, unsigned width = 0) {
  const unsigned n = v == 0 ? 1 : (static_cast<unsigned>(std::bit_width(v)) + 3) / 4;
  if (n < width) p = put_pad(p, width - n, ' ');
  static_assert(std::endian::native == std::endian::little);
  if (n <= 8) {  // offsets: the low half's digits are all there is
    const uint64_t shown = hex_digits8(static_cast<uint32_t>(v)) >> (8 * (8 - n));
    std::memcpy(p, &shown, 8);
    return p + n;
  }
  // Byte i of `digits` is the i-th of the 16 digits in memory order.
  const unsigned __int128 digits =
      static_cast<unsigned __int128>(hex_digits8(static_cast<uint32_t>(v))) << 64 |
      hex_digits8(static_cast<uint32_t>(v >> 32));
  const unsigned __int128 shown = digits >> (8 * (16 - n));
  std::memcpy(p, &shown, 16);
  return p + n;
}

// 64 bytes as four 16-byte moves (a 64-byte memcpy became `rep movs`, slow to
// start for a copy this short).
[[gnu::always_inline]] inline void copy64(char* dst, const char* src) {
  for (int i = 0; i < 4; i++) std::memcpy(dst + 16 * i, src + 16 * i, 16);
}

}  // namespace bpfprof::script
