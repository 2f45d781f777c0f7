// SPDX-License-Identifier: Apache-2.0
// The pass-2 memo of samples seen before (aggregate.cc): a sample with the
// key of one remembered, at a time its lookups still hold, goes to the same
// count slot and adds the same diagnostics, without being symbolized again.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "base/byte_cursor.h"
#include "base/diagnostics.h"
#include "base/prefault.h"
#include "perf/records.h"
#include "profile/profile.h"
#include "symbols/symbolizer.h"

namespace bpfprof::analysis {

// The diagnostics a memo replays, read before and after a miss (not the
// whole table: a miss is the common case of a callchain recording).
struct MemoCounts {
  std::array<uint64_t, symbols::kUnknownCount> unknown{};
  uint64_t bpf_unattributed = 0, cgroup_unknown = 0, dispatch_unattributed = 0, cost_unproven = 0;
  explicit MemoCounts(const DiagCounts& d);
};

class SampleMemos {
 public:
  // A sample's key: by everything its symbolization depends on besides its
  // time (pid, tid, cgroup id, whether the leaf is kernel code) and the
  // addresses looked up (`words`).
  struct Key {
    Bytes words;  // empty: not remembered
    uint64_t hash = 0;
  };
  // With `stacks` the whole callchain is looked up; else its leaf and the
  // kernel part the charge reads.
  static Key key_of(const perf::Sample& sample, bool kernel, bool stacks);

  // Room for memos of a report of `samples` samples: a small file's report
  // does not map and clear the whole table (256 KB) for a few hundred.
  explicit SampleMemos(uint64_t samples = kMemos);
  // The slot of a sample remembered under `key` at its time, its
  // diagnostics replayed into `diag`; null if none.
  profile::Counts* find(const Key& key, const perf::Sample& sample, bool kernel, DiagCounts& diag) const;
  // Remembers `slot` for `key` while `holds` does (if it holds at the
  // sample's time), with what the diagnostics gained from `before` to `after`.
  void remember(const Key& key, const perf::Sample& sample, bool kernel, profile::Counts* slot,
                const symbols::Symbolizer::Holds& holds, const MemoCounts& before,
                const MemoCounts& after);

 private:
  // One cache line; a callchain's words and unknown-frame counts lie beside
  // it (Tail), read when the key has more than one word or the sample had
  // unknown frames.
  struct Memo {
    uint64_t hash = 0;
    uint64_t from = 0, to = 0;  // to == 0: empty
    uint64_t cgroup = 0;
    uint64_t leaf = 0;  // the one word of a leaf key
    profile::Counts* slot = nullptr;
    uint32_t pid = 0, tid = 0;
    uint16_t key_bytes = 0;  // records are under 64 KiB
    bool kernel = false;
    bool unknowns = false;  // the tail's `unknown` are not all 0
    uint8_t bpf_unattributed = 0, cgroup_unknown = 0;
    uint8_t dispatch_unattributed = 0, cost_unproven = 0;
  };
  static_assert(sizeof(Memo) <= 64);
  struct Tail {
    std::vector<std::byte> words;  // a callchain key
    // Record sizes cap a chain at 8191 frames.
    std::array<uint16_t, symbols::kUnknownCount> unknown{};
  };
  // Direct-mapped by the key's hash: at most kMemos slots, a power of two.
  static constexpr size_t kMemos = 4096;
  size_t mask_ = 0;
  // Value-initialized at once: mapped in one call, not page by page.
  std::vector<Memo, PrefaultAllocator<Memo>> memos_;
  std::vector<Tail, PrefaultAllocator<Tail>> tails_;
};

}  // namespace bpfprof::analysis
