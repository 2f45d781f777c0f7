// SPDX-License-Identifier: Apache-2.0
// Turns one sample into symbolized frames, leaf first: the callchain's context
// markers switch between kernel and user lookups, and return addresses above
// the leaf are looked up at address - 1 (the call instruction, not the one
// after it, which may belong to the next function).
#pragma once

#include <cstdint>
#include <vector>

#include "perf/records.h"
#include "symbols/symbolizer.h"

namespace bpfprof::analysis {

struct SymbolizedFrame {
  symbols::Frame frame;
  uint64_t ip = 0;      // the address as recorded
  uint64_t lookup = 0;  // the address looked up (ip; above the leaf ip - 1, unless
                        // that byte lies in nothing and ip in something)
};

// One frame of a sample to symbolize: the address as recorded, the one to
// look up, whether kernel code, and whether it is a user-context word at a
// kernel-half address (a frame-pointer walk through data: no lookup, the
// frame is unmapped).
struct FrameRequest {
  uint64_t ip = 0, lookup = 0;
  bool kernel = false, unmapped = false;
};

// Calls visit(const FrameRequest&) for each frame of `sample`, leaf first.
// With `stack` false only for the leaf. Frames in hypervisor or guest
// context are skipped.
template <class Visit>
void for_each_frame(const perf::Sample& sample, uint16_t cpumode, bool stack, Visit&& visit);

// The frame of `sample` that `r` asks for. With `holds`, the times for which
// the lookups made give the same answer are intersected into it.
SymbolizedFrame symbolize_frame(const symbols::Symbolizer& symbolizer, const perf::Sample& sample,
                                const FrameRequest& r, symbols::Symbolizer::Holds* holds = nullptr);

// Fills `out` (cleared first). With `stack` false only the leaf is
// symbolized. Frames in hypervisor or guest context are skipped. A sample
// with neither ip nor callchain frames gives an empty vector. With `holds`,
// the times around the sample's for which every lookup made gives the same
// answer are intersected into it.
void symbolize_sample(const symbols::Symbolizer& symbolizer, const perf::Sample& sample,
                      uint16_t cpumode, bool stack, std::vector<SymbolizedFrame>& out,
                      symbols::Symbolizer::Holds* holds = nullptr);

template <class Visit>
void for_each_frame(const perf::Sample& sample, uint16_t cpumode, bool stack, Visit&& visit) {
  const bool leaf_kernel = cpumode == perf::kMiscKernel;
  const perf::U64Array& chain = sample.callchain;
  if ((!stack || chain.empty()) && sample.ip != 0) {
    visit(FrameRequest{sample.ip, sample.ip, leaf_kernel, false});
    return;
  }
  // Context markers switch between kernel and user lookups; hypervisor and
  // guest frames are not ours to symbolize.
  enum class Space { kKernel, kUser, kOther };
  Space space = leaf_kernel ? Space::kKernel : Space::kUser;
  bool leaf = true;
  for (size_t i = 0; i < chain.size(); i++) {
    const uint64_t ip = chain[i];
    if (ip >= perf::kContextMax) {
      space = ip == perf::kContextKernel ? Space::kKernel
              : ip == perf::kContextUser ? Space::kUser
                                         : Space::kOther;
      continue;
    }
    if (space == Space::kOther) continue;
    const bool is_leaf = leaf;
    leaf = false;
    if (!is_leaf && space == Space::kUser && symbols::Symbolizer::looks_up_kernel(ip, false)) {
      // A caller in user context at a kernel-half address: a word of the
      // user stack that is no return address. No process maps it, and it is
      // not kernel code.
      visit(FrameRequest{ip, ip, false, true});
    } else {
      // Above the leaf, the call instruction before the return address; a 0
      // (where a user stack walk ended) is looked up as itself, not as the
      // top of the address space, which is kernel code.
      visit(FrameRequest{ip, is_leaf || ip == 0 ? ip : ip - 1, space == Space::kKernel, false});
    }
    if (!stack) return;
  }
}

}  // namespace bpfprof::analysis
