// SPDX-License-Identifier: Apache-2.0
#include "symbols/kernel_symbols.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <memory>

namespace bpfprof::symbols {
namespace {

constexpr std::string_view kKernelDso = "[kernel.kallsyms]";
// Without a module map (old recordings), the last symbol of a module is
// capped so that it cannot swallow BPF code that the JIT put after it.
constexpr uint64_t kUncappedSymbolMax = 4096;

bool is_text_type(char t) {
  switch (t) {
    case 't': case 'T': case 'w': case 'W':
      return true;
    default:
      return false;
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

}  // namespace

bool parse_kallsyms_line(std::string_view line, KallsymsLine& out) {
  line = trim(line);
  size_t sp = line.find(' ');
  if (sp == std::string_view::npos || sp == 0) return false;
  uint64_t addr = 0;
  auto [p, ec] = std::from_chars(line.data(), line.data() + sp, addr, 16);
  if (ec != std::errc() || p != line.data() + sp) return false;
  line.remove_prefix(sp + 1);
  if (line.size() < 3 || line[1] != ' ') return false;
  out.addr = addr;
  out.type = line[0];
  line.remove_prefix(2);
  size_t tab = line.find('\t');
  out.name = trim(line.substr(0, tab));
  out.module = {};
  if (tab != std::string_view::npos) {
    std::string_view mod = trim(line.substr(tab + 1));
    if (mod.size() >= 2 && mod.front() == '[' && mod.back() == ']') mod = mod.substr(1, mod.size() - 2);
    out.module = mod;
  }
  return !out.name.empty();
}

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

void KernelSymbols::parse(std::string_view text) {
  has_snapshot_ = true;
  std::vector<Raw>& raw = raw_;
  raw.clear();
  uint64_t etext = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    KallsymsLine l;
    if (!parse_kallsyms_line(line, l)) continue;
    if (l.module.empty() && l.name == "_etext") etext = l.addr;
    // _etext is a marker, not code; [bpf] lines are the KSYMBOL timeline's.
    if (!is_text_type(l.type) || l.module == "bpf" || l.addr == 0 || l.name == "_etext") continue;
    raw.push_back({l.addr, l.name, l.module, l.type});
  }
  etext_ = etext;
  // Aliases at one address: the global name wins, then the first listed.
  auto before = [](const Raw& a, const Raw& b) {
    if (a.addr != b.addr) return a.addr < b.addr;
    return std::isupper(static_cast<unsigned char>(a.type)) > std::isupper(static_cast<unsigned char>(b.type));
  };
  // /proc/kallsyms is mostly in address order already: check before sorting.
  if (!std::is_sorted(raw.begin(), raw.end(), before)) std::stable_sort(raw.begin(), raw.end(), before);
  raw.erase(std::unique(raw.begin(), raw.end(), [](const Raw& a, const Raw& b) { return a.addr == b.addr; }),
            raw.end());
}

void KernelSymbols::build() {
  const std::vector<Raw>& raw = raw_;
  const uint64_t etext = etext_ != 0 ? etext_ : kernel_map_.end;

  std::unordered_map<std::string_view, std::string_view> dso_of;  // module -> "[module]"
  auto module_dso = [&](std::string_view mod) -> std::string_view {
    if (auto it = dso_of.find(mod); it != dso_of.end()) return it->second;
    // Heap-held so the views stay put when owned_ grows.
    owned_.push_back(std::make_unique<std::string>("[" + std::string(mod) + "]"));
    return dso_of[mod] = *owned_.back();
  };

  symbols_.clear();
  symbols_.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    const Raw& r = raw[i];
    const bool has_next = i + 1 < raw.size();
    uint64_t end = has_next ? raw[i + 1].addr : r.addr + kUncappedSymbolMax;
    Symbol s{r.addr, end, r.name, kKernelDso, !r.module.empty()};
    if (r.module.empty()) {
      if (etext != 0 && r.addr < etext) end = std::min(end, etext);
      if (!has_next || !raw[i + 1].module.empty()) {
        // The last core symbol: to the kernel map's end, never into modules.
        if (kernel_map_.end > r.addr) {
          end = std::min(end, kernel_map_.end);
        } else {
          end = std::min(end, r.addr + kUncappedSymbolMax);
          s.exact = false;
        }
      }
    } else {
      s.dso = module_dso(r.module);
      auto m = module_maps_.find(r.module);
      if (m != module_maps_.end() && m->second.end > r.addr) {
        end = std::min(end, m->second.end);
      } else if (!has_next || raw[i + 1].module != r.module) {
        end = std::min(end, r.addr + kUncappedSymbolMax);
        s.exact = false;
      }
    }
    s.end = end;
    if (s.end > s.start) symbols_.push_back(s);
  }
  std::vector<Raw>().swap(raw_);
  starts_.clear();
  starts_.reserve(symbols_.size());
  for (const Symbol& s : symbols_) starts_.push_back(s.start);
}

const KernelSymbols::Symbol* KernelSymbols::find(uint64_t addr) const {
  // Each thread remembers the indexes of its last few answers (samples repeat
  // the same code, per CPU). Symbols do not overlap, so a symbol of this table
  // that holds `addr` is the answer, whichever table an index came from.
  constexpr size_t kRecent = 4;
  thread_local size_t recent[kRecent] = {};
  thread_local size_t next = 0;
  for (size_t i : recent) {
    if (i < symbols_.size() && addr >= symbols_[i].start && addr < symbols_[i].end) {
      return &symbols_[i];
    }
  }
  const auto it = std::upper_bound(starts_.begin(), starts_.end(), addr);
  if (it == starts_.begin()) return nullptr;
  const size_t i = static_cast<size_t>(it - starts_.begin()) - 1;
  if (addr >= symbols_[i].end) return nullptr;
  recent[next++ % kRecent] = i;
  return &symbols_[i];
}

}  // namespace bpfprof::symbols
