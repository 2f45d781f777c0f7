// SPDX-License-Identifier: Apache-2.0
// Kernel and module text from the kallsyms snapshot stored in the file
// (Features::kallsyms_packed), never from the reporting host. A symbol ends where the
// next one begins; the last symbol of the core kernel ends at _etext (or the
// kernel map's end) and the last one of a module at the module's end as its
// kernel MMAP tells it. The snapshot's table is searched where it lies; the
// ends are worked out per lookup.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "perfdata/kallsyms_table.h"

namespace bpfprof::symbols {

// Sorted, non-overlapping kernel text symbols; immutable after build().
class KernelSymbols {
 public:
  struct Symbol {
    uint64_t start = 0, end = 0;
    std::string_view name;
    std::string_view dso;  // "[kernel.kallsyms]" or "[module]"
    bool module = false;
    // False when the end is a guess (last symbol of a module without a map):
    // then a BPF range known at that address is the better answer.
    bool exact = true;
  };

  // Kernel MMAPs: "[kernel.kallsyms]_text" (core text range) or "[module]".
  void add_kernel_map(std::string_view filename, uint64_t start, uint64_t len);
  // Parses /proc/kallsyms text (tests, live sessions) and builds.
  void build(std::string_view text) {
    set_table(perfdata::KallsymsTable::from_text(text));
    build();
  }
  // The snapshot (views into it stay in use); may be set while the maps are
  // still being added. build() then ends the symbols at the maps. Neither may
  // run concurrently with find().
  void set_table(perfdata::KallsymsTable table);
  void build();

  bool has_snapshot() const { return has_snapshot_; }
  std::optional<Symbol> find(uint64_t addr) const;
  size_t size() const { return table_.size(); }
  // The first block of a version 5 snapshot found damaged by find() so far.
  std::optional<Error> damage() const;

 private:
  struct Range {
    uint64_t start = 0, end = 0;
  };
  perfdata::KallsymsTable table_;
  bool has_snapshot_ = false;
  uint64_t etext_ = 0;  // _etext, else the kernel map's end
  Range kernel_map_;
  std::unordered_map<std::string_view, Range> module_maps_;  // by module name
  std::vector<Range> module_range_;  // by the table's module number (0 = none)
};

}  // namespace bpfprof::symbols
