// SPDX-License-Identifier: Apache-2.0
// A BTF blob parsed by libbpf and owned: freed when the owner goes.
#pragma once

#include <bpf/btf.h>

#include <memory>

#include "bpf/prog_info.h"

namespace bpfprof::bpf {

struct BtfFree {
  void operator()(btf* b) const { btf__free(b); }
};
using OwnedBtf = std::unique_ptr<btf, BtfFree>;

// `blob` parsed; null when it is empty or does not parse (libbpf 1.x returns
// NULL on errors, no error pointers).
inline OwnedBtf parse_btf(const BtfBlob& blob) {
  if (blob.data.empty()) return nullptr;
  return OwnedBtf(btf__new(blob.data.data(), static_cast<__u32>(blob.data.size())));
}

}  // namespace bpfprof::bpf
