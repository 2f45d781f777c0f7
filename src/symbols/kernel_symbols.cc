// SPDX-License-Identifier: Apache-2.0
#include "symbols/kernel_symbols.h"

#include <algorithm>

namespace bpfprof::symbols {
namespace {

constexpr std::string_view kKernelDso = "[kernel.kallsyms]";
// Without a module map (old recordings), the last symbol of a module is
// capped so that it cannot swallow BPF code that the JIT put after it.
constexpr uint64_t kUncappedSymbolMax = 4096;

}  // namespace

void KernelSymbols::add_kernel_map(std::string_view filename, uint64_t start, uint64_t len) {
  if (filename.starts_with(kKernelDso)) {
    kernel_map_ = {start, start + len};
    return;
  }
  if (filename.size() >= 2 && filename.front() == '[' && filename.back() == ']') {
    // Views into the caller's interned storage (the symbolizer's pool).
    module_maps_[filename.substr(1, filename.size() - 2)] = {start, start + len};
  }
}

std::optional<Error> KernelSymbols::damage() const { return table_.damage(); }

void KernelSymbols::set_table(perfdata::KallsymsTable table) {
  table_ = std::move(table);
  has_snapshot_ = true;
}

void KernelSymbols::build() {
  etext_ = table_.etext() != 0 ? table_.etext() : kernel_map_.end;
  module_range_.assign(table_.module_count() + 1, Range{});
  for (uint32_t m = 1; m <= table_.module_count(); m++) {
    const std::string_view dso = table_.module_dso(m);
    auto it = module_maps_.find(dso.substr(1, dso.size() - 2));
    if (it != module_maps_.end()) module_range_[m] = it->second;
  }
}

std::optional<KernelSymbols::Symbol> KernelSymbols::find(uint64_t addr) const {
  const size_t n = table_.size();
  // Each thread remembers the index of its last few answers (samples repeat
  // the same code, per CPU). An index from any table is checked against this
  // one: it is the answer if `addr` lies between its start and the next.
  constexpr size_t kRecent = 4;
  thread_local size_t recent[kRecent] = {};
  thread_local size_t next_slot = 0;
  size_t i = n;
  for (size_t r : recent) {
    if (r < n && addr >= table_.addr(r) && (r + 1 == n || addr < table_.addr(r + 1))) {
      i = r;
      break;
    }
  }
  if (i == n) {
    i = table_.floor(addr);
    if (i == n) return std::nullopt;
    recent[next_slot++ % kRecent] = i;
  }
  const uint64_t start = table_.addr(i);
  const bool has_next = i + 1 < n;
  const uint32_t mod = table_.module(i);
  uint64_t end = has_next ? table_.addr(i + 1) : start + kUncappedSymbolMax;
  Symbol s{start, end, table_.name(i), kKernelDso, mod != 0};
  // A symbol without a name names nothing (a table of version 2 may hold
  // one; a damaged block of version 5 holds no symbol at all).
  if (s.name.empty()) return std::nullopt;
  if (mod == 0) {
    if (etext_ != 0 && start < etext_) end = std::min(end, etext_);
    if (!has_next || table_.module(i + 1) != 0) {
      // The last core symbol: to the kernel map's end, never into modules.
      if (kernel_map_.end > start) {
        end = std::min(end, kernel_map_.end);
      } else {
        end = std::min(end, start + kUncappedSymbolMax);
        s.exact = false;
      }
    }
  } else {
    s.dso = table_.module_dso(mod);
    const Range m = mod < module_range_.size() ? module_range_[mod] : Range{};
    if (m.end > start) {
      end = std::min(end, m.end);
    } else if (!has_next || table_.module(i + 1) != mod) {
      end = std::min(end, start + kUncappedSymbolMax);
      s.exact = false;
    }
  }
  s.end = end;
  if (addr >= s.end) return std::nullopt;
  return s;
}

}  // namespace bpfprof::symbols
