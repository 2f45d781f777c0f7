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

// Fills `out` (cleared first). With `stack` false only the leaf is
// symbolized. Frames in hypervisor or guest context are skipped. A sample
// with neither ip nor callchain frames gives an empty vector. With `holds`,
// the times around the sample's for which every lookup made gives the same
// answer are intersected into it.
void symbolize_sample(const symbols::Symbolizer& symbolizer, const perf::Sample& sample,
                      uint16_t cpumode, bool stack, std::vector<SymbolizedFrame>& out,
                      symbols::Symbolizer::Holds* holds = nullptr);

}  // namespace bpfprof::analysis
