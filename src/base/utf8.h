// SPDX-License-Identifier: Apache-2.0
// Names from a recording (comms the kernel cut at 15 bytes, ELF symbols,
// paths) are bytes, not necessarily UTF-8; formats that require UTF-8 get
// them through valid_utf8().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace bpfprof {

// Length of the well-formed UTF-8 sequence at the front of `s` (RFC 3629:
// no overlong forms, no surrogates, nothing above U+10FFFF); 0 if there is none.
inline size_t utf8_sequence_length(std::string_view s) {
  auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  auto cont = [&](size_t i) { return i < s.size() && (byte(i) & 0xC0) == 0x80; };
  if (s.empty()) return 0;
  const uint8_t b = byte(0);
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return cont(1) ? 2 : 0;
  if (b >= 0xE0 && b <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (b == 0xE0 && byte(1) < 0xA0) return 0;   // overlong
    if (b == 0xED && byte(1) > 0x9F) return 0;   // surrogates
    return 3;
  }
  if (b >= 0xF0 && b <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (b == 0xF0 && byte(1) < 0x90) return 0;   // overlong
    if (b == 0xF4 && byte(1) > 0x8F) return 0;   // above U+10FFFF
    return 4;
  }
  return 0;
}

// `s` with every byte that does not start a well-formed sequence replaced by
// U+FFFD; valid text comes back unchanged.
inline std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  while (!s.empty()) {
    const size_t n = utf8_sequence_length(s);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      s.remove_prefix(1);
    } else {
      out.append(s.substr(0, n));
      s.remove_prefix(n);
    }
  }
  return out;
}

}  // namespace bpfprof
