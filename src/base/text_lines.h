// SPDX-License-Identifier: Apache-2.0
// Text taken a line and a field at a time (/proc files, kallsyms text).
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

namespace bpfprof {

// Calls fn(line) for every line of `text`, without its '\n'; a last line
// without one counts too. Views point into `text`. An fn that returns bool
// stops the walk by returning false.
template <class Fn>
void for_each_line(std::string_view text, Fn&& fn) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if constexpr (std::is_same_v<decltype(fn(line)), bool>) {
      if (!fn(line)) return;
    } else {
      fn(line);
    }
  }
}

inline bool is_blank(char c) { return c == ' ' || c == '\t'; }

// The next blank-separated field of `s`, consumed. Plain loops: the
// find_first_of family calls memchr once per character, which showed as the
// largest user-space cost of a 5 MB kallsyms scan.
inline std::string_view next_field(std::string_view& s) {
  const char* p = s.data();
  const char* end = p + s.size();
  while (p != end && is_blank(*p)) ++p;
  const char* b = p;
  while (p != end && !is_blank(*p)) ++p;
  s = std::string_view(p, static_cast<size_t>(end - p));
  return std::string_view(b, static_cast<size_t>(p - b));
}

// A whole field in hex, "0x" allowed; nullopt if it is anything else.
inline std::optional<uint64_t> parse_hex(std::string_view s) {
  if (s.starts_with("0x")) s.remove_prefix(2);
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace bpfprof
