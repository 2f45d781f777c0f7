// SPDX-License-Identifier: Apache-2.0
// What kind of code a frame is in: the one piece of the symbolizer that the
// aggregation model (profile/) needs, in a header of its own.
#pragma once

#include <cstdint>

namespace bpfprof::symbols {

enum class FrameKind : uint8_t {
  kBpf,      // JIT'd BPF program function (KSYMBOL type BPF, not a trampoline)
  kBpfImage, // BPF trampoline / dispatcher
  kKernel,   // kernel text
  kModule,   // kernel module text
  kUser,     // user space (ELF symbol)
  kUnknown,
};

}  // namespace bpfprof::symbols
