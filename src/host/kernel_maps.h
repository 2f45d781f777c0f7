// SPDX-License-Identifier: Apache-2.0
// Where the kernel's text and modules sit, from /proc/kallsyms and
// /proc/modules: what the synthesized kernel and module MMAPs say. Parsers
// take text so tests can feed them strings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/text_file.h"
#include "bpf/query.h"
#include "perfdata/kallsyms_line.h"

namespace bpfprof::host {

using perfdata::KallsymsLine;
using perfdata::parse_kallsyms_line;

// The core kernel text: [start, end) with the reference symbol perf names the
// map after (`_text`, else `_stext`).
struct KernelText {
  std::string ref_name;
  uint64_t start = 0;
  uint64_t end = 0;  // _etext; 0 if not found
};
// Everything the synthesis needs from kallsyms in one pass (the kernel
// formats the whole file on every read, so each pass costs ~50 ms of CPU).
struct KallsymsScan {
  Result<KernelText> text = make_error(Errc::kNotFound, "kallsyms not read");
  std::vector<bpf::KallsymsEntry> bpf;  // "[bpf]" entries, sorted by address
  // The kernel and module text symbols (types t T w W, not [bpf], address not
  // hidden), one original line each: the snapshot stored in the file
  // (perfdata::Features::kallsyms). Empty when addresses are hidden.
  std::string text_symbols;
};
// The snapshot is made from `kallsyms`'s own buffer (no copy). Lines that do
// not parse are skipped; without _text/_stext, `text` is kNotFound.
KallsymsScan scan_kallsyms(std::string&& kallsyms);
Result<KallsymsScan> read_kallsyms(const std::string& path = "/proc/kallsyms");

// One loaded module: "name size refcnt deps state addr".
struct ModuleMap {
  std::string name;
  uint64_t start = 0;
  uint64_t size = 0;
};
std::vector<ModuleMap> parse_modules(std::string_view text);
// /proc/modules; an absent file (no module support) is an empty list.
std::vector<ModuleMap> read_modules(const std::string& path = "/proc/modules");

}  // namespace bpfprof::host
