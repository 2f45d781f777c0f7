// SPDX-License-Identifier: Apache-2.0
// ByteCursor: bounds-checked, unaligned-safe reads over a byte span. A failed
// read produces the error itself (field name and absolute offset), so parsers
// do not repeat "not enough data" branches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "base/error.h"

namespace bpfprof {

using Bytes = std::span<const std::byte>;

// Reads a trivially copyable T at byte offset `at` of `data` without alignment
// requirements. The caller has checked the bounds.
template <class T>
T load_unaligned(const std::byte* p) {
  static_assert(std::is_trivially_copyable_v<T>);
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

class ByteCursor {
 public:
  // `base_offset` is the absolute offset of data[0] in the input, used in errors.
  explicit ByteCursor(Bytes data, uint64_t base_offset = 0)
      : data_(data), base_offset_(base_offset) {}

  size_t pos() const { return pos_; }
  size_t size() const { return data_.size(); }
  size_t remaining() const { return data_.size() - pos_; }
  uint64_t absolute_pos() const { return base_offset_ + pos_; }
  Bytes data() const { return data_; }

  template <class T>
  Result<T> read(std::string_view field) {
    if (remaining() < sizeof(T)) return short_read(field, sizeof(T));
    T v = load_unaligned<T>(data_.data() + pos_);
    pos_ += sizeof(T);
    return v;
  }
  Result<uint8_t> u8(std::string_view field) { return read<uint8_t>(field); }
  Result<uint16_t> u16(std::string_view field) { return read<uint16_t>(field); }
  Result<uint32_t> u32(std::string_view field) { return read<uint32_t>(field); }
  Result<uint64_t> u64(std::string_view field) { return read<uint64_t>(field); }

  // A view of the next n bytes (no copy).
  Result<Bytes> bytes(size_t n, std::string_view field) {
    if (remaining() < n) return short_read(field, n);
    Bytes out = data_.subspan(pos_, n);
    pos_ += n;
    return out;
  }

  // n elements of T, n * sizeof(T) checked for overflow.
  template <class T>
  Result<Bytes> array(uint64_t n, std::string_view field) {
    if (n > remaining() / sizeof(T)) return short_read(field, n * sizeof(T));
    return bytes(static_cast<size_t>(n) * sizeof(T), field);
  }

  Status skip(size_t n, std::string_view field) {
    if (remaining() < n) return short_read(field, n);
    pos_ += n;
    return ok_status();
  }

  Status seek(size_t pos, std::string_view field) {
    if (pos > data_.size()) return short_read(field, pos - pos_);
    pos_ = pos;
    return ok_status();
  }

  // A NUL-terminated string inside the next `n` bytes (consumes all n). A field
  // without a NUL is taken whole.
  Result<std::string_view> fixed_string(size_t n, std::string_view field) {
    auto b = bytes(n, field);
    if (!b.ok()) return std::move(b).error();
    const char* s = reinterpret_cast<const char*>(b->data());
    size_t len = strnlen(s, n);
    return std::string_view(s, len);
  }

 private:
  Error short_read(std::string_view field, uint64_t wanted) const {
    return make_error_at(Errc::kTruncated, absolute_pos(),
                         std::string(field) + ": needs " + std::to_string(wanted) +
                             " bytes, " + std::to_string(remaining()) + " left");
  }

  Bytes data_;
  uint64_t base_offset_ = 0;
  size_t pos_ = 0;
};

// Appends trivially copyable values to a byte vector (writers and test builders).
template <class Vec, class T>
void append_pod(Vec& out, const T& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

inline Bytes as_bytes_of(const void* p, size_t n) {
  return Bytes(static_cast<const std::byte*>(p), n);
}

}  // namespace bpfprof
