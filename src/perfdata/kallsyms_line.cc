// SPDX-License-Identifier: Apache-2.0
#include "perfdata/kallsyms_line.h"

#include "base/text_lines.h"

namespace bpfprof::perfdata {

std::optional<KallsymsLine> parse_kallsyms_line(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  KallsymsLine out;
  auto addr = parse_hex(next_field(line));
  std::string_view type = next_field(line);
  std::string_view name = next_field(line);
  if (!addr || type.size() != 1 || name.empty()) return std::nullopt;
  out.addr = *addr;
  out.type = type[0];
  out.name = name;
  std::string_view module = next_field(line);
  if (module.size() >= 2 && module.front() == '[' && module.back() == ']') {
    out.module = module.substr(1, module.size() - 2);
  }
  return out;
}

}  // namespace bpfprof::perfdata
