// SPDX-License-Identifier: Apache-2.0
// What the kallsyms snapshot's encoders and decoders share (kallsyms_feature.cc:
// versions 1-3; kallsyms_blocked.cc: version 5). Internal to perfdata/.
#pragma once

#include <zstd.h>

#include <cstddef>
#include <cstdint>

namespace bpfprof::perfdata::kallsyms_codec {

constexpr uint32_t kVersionBlocked = 5;
// The compression field: 1, zstd.
constexpr uint32_t kZstd = 1;
// A version 2 table's header: u32 version, u32 flags, u64 count, u64 etext,
// u32 modules, u32 pool_size.
constexpr size_t kTableHeader = 32;
// Versions 3 and 5: the level where a 4.6 MB table of 121k symbols becomes
// 0.63 MB in ~50 ms, once per recording (level 3: 0.72 MB in ~25 ms; 19:
// 0.61 MB in 2.6 s).
constexpr int kCompactLevel = 6;

struct DCtxFree {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};

}  // namespace bpfprof::perfdata::kallsyms_codec
