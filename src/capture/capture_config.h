// SPDX-License-Identifier: Apache-2.0
// How the in-kernel capture is set up: small enough for record's options to
// include.
#pragma once

#include <cstdint>

namespace bpfprof::capture {

inline constexpr uint32_t kDefaultRingBytes = 4u << 20;  // the capture's BPF ring

struct CaptureConfig {
  // The BPF ring's size: a power of two, at least a page.
  uint32_t ring_bytes = kDefaultRingBytes;
};

}  // namespace bpfprof::capture
