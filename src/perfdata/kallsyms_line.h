// SPDX-License-Identifier: Apache-2.0
// One /proc/kallsyms line, as record reads the live file and the snapshot
// table reads stored or --kallsyms text.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace bpfprof::perfdata {

// "ffffffff81000000 T _text" or "ffffffffc0100000 t name\t[module]"; views
// into the line.
struct KallsymsLine {
  uint64_t addr = 0;
  char type = 0;
  std::string_view name;
  std::string_view module;  // without brackets; empty for the core kernel
};

// Fields split on runs of blanks (spaces, tabs), a trailing "\r" or "\n"
// ignored; nullopt without a hex address, a one-letter type and a name.
std::optional<KallsymsLine> parse_kallsyms_line(std::string_view line);

// Code symbols: text (t, T) and weak (w, W), which on x86 are functions.
inline bool is_text_type(char type) {
  return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

}  // namespace bpfprof::perfdata
