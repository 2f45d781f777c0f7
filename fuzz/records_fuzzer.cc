// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the record parsers. The input is a run of records (as in
// a data section or a ring); each one is parsed by every typed parser under
// every fuzz layout. Nothing may crash or read out of bounds.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bpfprof;
  static const std::vector<perf::SampleLayout> kLayouts = fuzz::layouts();
  const Bytes input(reinterpret_cast<const std::byte*>(data), size);
  size_t pos = 0;
  while (pos < input.size()) {
    auto r = perf::record_at(input, pos, 4096);
    if (!r.ok()) break;
    for (const perf::SampleLayout& l : kLayouts) fuzz::parse_all(*r, l);
    pos += r->header.size;
  }
  return 0;
}
