// SPDX-License-Identifier: Apache-2.0
#include "analysis/sample_frames.h"

#include <algorithm>

namespace bpfprof::analysis {
namespace {

enum class Space { kKernel, kUser, kOther };

Space space_of_marker(uint64_t marker) {
  if (marker == perf::kContextKernel) return Space::kKernel;
  if (marker == perf::kContextUser) return Space::kUser;
  return Space::kOther;  // hypervisor, guest: not ours to symbolize
}

}  // namespace

void symbolize_sample(const symbols::Symbolizer& symbolizer, const perf::Sample& sample,
                      uint16_t cpumode, bool stack, std::vector<SymbolizedFrame>& out,
                      symbols::Symbolizer::Holds* holds) {
  out.clear();
  const bool leaf_kernel = cpumode == perf::kMiscKernel;
  auto find = [&](uint64_t addr, bool kernel) {
    if (!holds) return symbolizer.lookup(sample.pid, addr, sample.time, kernel);
    symbols::Symbolizer::Holds h;
    symbols::Frame f = symbolizer.lookup(sample.pid, addr, sample.time, kernel, h);
    holds->from = std::max(holds->from, h.from);
    holds->to = std::min(holds->to, h.to);
    return f;
  };
  auto add = [&](uint64_t ip, uint64_t lookup, bool kernel) {
    symbols::Frame f = find(lookup, kernel);
    auto in_nothing = [](const symbols::Frame& fr) {
      return fr.unknown == symbols::Unknown::kNoMap ||
             fr.unknown == symbols::Unknown::kKernelNoSymbol;
    };
    if (lookup != ip && in_nothing(f)) {
      // A return address at the first byte of a symbol or mapping with
      // nothing before it (a leaf repeated by the unwinder at a BPF
      // program's entry, a call that ends a mapping): the address itself
      // names what there is, the symbol or at least the file.
      symbols::Frame at = find(ip, kernel);
      if (!in_nothing(at)) {
        out.push_back(SymbolizedFrame{at, ip, ip});
        return;
      }
    }
    out.push_back(SymbolizedFrame{f, ip, lookup});
  };
  const perf::U64Array& chain = sample.callchain;
  if (!stack || chain.empty()) {
    if (sample.ip != 0) {
      add(sample.ip, sample.ip, leaf_kernel);
      return;
    }
  }
  Space space = leaf_kernel ? Space::kKernel : Space::kUser;
  for (size_t i = 0; i < chain.size(); i++) {
    const uint64_t ip = chain[i];
    if (ip >= perf::kContextMax) {
      space = space_of_marker(ip);
      continue;
    }
    if (space == Space::kOther) continue;
    // Above the leaf, the call instruction before the return address; a 0
    // (where a user stack walk ended) is looked up as itself, not as the
    // top of the address space, which is kernel code.
    const bool is_leaf = out.empty();
    if (!is_leaf && space == Space::kUser && symbols::Symbolizer::looks_up_kernel(ip, false)) {
      // A caller in user context at a kernel-half address: a word of the
      // user stack that is no return address (a frame-pointer walk through
      // data). No process maps it, and it is not kernel code.
      symbols::Frame unmapped;
      unmapped.unknown = symbols::Unknown::kNoMap;
      out.push_back(SymbolizedFrame{unmapped, ip, ip});
      if (!stack) return;
      continue;
    }
    add(ip, is_leaf || ip == 0 ? ip : ip - 1, space == Space::kKernel);
    if (!stack) return;
  }
}

}  // namespace bpfprof::analysis
