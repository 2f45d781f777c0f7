// SPDX-License-Identifier: Apache-2.0
// Kernel and module text from the kallsyms snapshot stored in the file
// (Features::kallsyms), never from the reporting host. A symbol ends where the
// next one begins; the last symbol of the core kernel ends at _etext (or the
// kernel map's end) and the last one of a module at the module's end as its
// kernel MMAP tells it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace bpfprof::symbols {

// One parsed /proc/kallsyms line; views into the text.
struct KallsymsLine {
  uint64_t addr = 0;
  char type = 0;
  std::string_view name;
  std::string_view module;  // without brackets; empty for the core kernel
};
// Parses "addr type name" or "addr type name\t[module]"; false if malformed.
bool parse_kallsyms_line(std::string_view line, KallsymsLine& out);

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
  // Parses the snapshot; `text` must outlive this object (names are views).
  // Lines of the "[bpf]" pseudo module are skipped: BPF code is named by the
  // KSYMBOL timeline, at the right time.
  void build(std::string_view text) {
    parse(text);
    build();
  }
  // The same in two steps: parse() needs no kernel map, so it may run (on
  // another thread) while the maps are still being added; build() then ends
  // the symbols at the maps. Neither may run concurrently with find().
  void parse(std::string_view text);
  void build();

  bool has_snapshot() const { return has_snapshot_; }
  const Symbol* find(uint64_t addr) const;
  size_t size() const { return symbols_.size(); }

 private:
  struct Range {
    uint64_t start = 0, end = 0;
  };
  // parse()'s output: text symbols in address order, one per address.
  struct Raw {
    uint64_t addr;
    std::string_view name, module;
    char type;
  };
  std::vector<Raw> raw_;
  uint64_t etext_ = 0;
  bool has_snapshot_ = false;
  Range kernel_map_;
  std::unordered_map<std::string_view, Range> module_maps_;  // by module name
  std::vector<std::unique_ptr<std::string>> owned_;          // "[module]" dso names
  std::vector<Symbol> symbols_;
  // symbols_[i].start: the binary search reads these 8 bytes a symbol, not 64.
  std::vector<uint64_t> starts_;
};

}  // namespace bpfprof::symbols
