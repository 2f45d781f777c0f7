// SPDX-License-Identifier: Apache-2.0
#include "analysis/sample_frames.h"

#include <algorithm>

namespace bpfprof::analysis {

SymbolizedFrame symbolize_frame(const symbols::Symbolizer& symbolizer, const perf::Sample& sample,
                                const FrameRequest& r, symbols::Symbolizer::Holds* holds) {
  if (r.unmapped) {
    symbols::Frame unmapped;
    unmapped.unknown = symbols::Unknown::kNoMap;
    return SymbolizedFrame{unmapped, r.ip, r.ip};
  }
  auto find = [&](uint64_t addr) {
    if (!holds) return symbolizer.lookup(sample.pid, addr, sample.time, r.kernel);
    symbols::Symbolizer::Holds h;
    symbols::Frame f = symbolizer.lookup(sample.pid, addr, sample.time, r.kernel, h);
    holds->from = std::max(holds->from, h.from);
    holds->to = std::min(holds->to, h.to);
    return f;
  };
  symbols::Frame f = find(r.lookup);
  auto in_nothing = [](const symbols::Frame& fr) {
    return fr.unknown == symbols::Unknown::kNoMap ||
           fr.unknown == symbols::Unknown::kKernelNoSymbol;
  };
  if (r.lookup != r.ip && in_nothing(f)) {
    // A return address at the first byte of a symbol or mapping with
    // nothing before it (a leaf repeated by the unwinder at a BPF
    // program's entry, a call that ends a mapping): the address itself
    // names what there is, the symbol or at least the file.
    symbols::Frame at = find(r.ip);
    if (!in_nothing(at)) return SymbolizedFrame{at, r.ip, r.ip};
  }
  return SymbolizedFrame{f, r.ip, r.lookup};
}

void symbolize_sample(const symbols::Symbolizer& symbolizer, const perf::Sample& sample,
                      uint16_t cpumode, bool stack, std::vector<SymbolizedFrame>& out,
                      symbols::Symbolizer::Holds* holds) {
  out.clear();
  for_each_frame(sample, cpumode, stack, [&](const FrameRequest& r) {
    out.push_back(symbolize_frame(symbolizer, sample, r, holds));
  });
}

}  // namespace bpfprof::analysis
