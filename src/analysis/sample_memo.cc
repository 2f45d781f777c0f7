// SPDX-License-Identifier: Apache-2.0
#include "analysis/sample_memo.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <span>

namespace bpfprof::analysis {
namespace {

constexpr size_t kUnknownReasons = symbols::kUnknownCount;

inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

// The addresses a sample's frames and charge are looked up by: with
// `stacks` the whole callchain; else the chain's words up to the kernel
// part's end (the charge reads no user frame, symbolize_for_charge), or up
// to the leaf where it is user code; without a chain the leaf ip. Empty:
// not remembered.
Bytes memo_words(const perf::Sample& sample, bool kernel, bool stacks) {
  if (sample.callchain.empty()) {
    if (sample.ip != 0) return std::as_bytes(std::span(&sample.ip, 1));
    return {};
  }
  const Bytes all = sample.callchain.bytes();
  if (stacks) return all;
  const perf::U64Array& chain = sample.callchain;
  // As for_each_frame walks it: markers switch the space, other spaces'
  // frames are skipped, the first frame left is the leaf.
  bool user = !kernel, other = false, leaf = false;
  for (size_t i = 0; i < chain.size(); i++) {
    const uint64_t ip = chain[i];
    if (ip >= perf::kContextMax) {
      if (ip == perf::kContextUser && leaf) return all.first(i * sizeof(uint64_t));
      user = ip == perf::kContextUser;
      other = ip != perf::kContextUser && ip != perf::kContextKernel;
      continue;
    }
    if (other || leaf) continue;
    leaf = true;
    if (user) return all.first((i + 1) * sizeof(uint64_t));
  }
  return all;
}

}  // namespace

MemoCounts::MemoCounts(const DiagCounts& d)
    : bpf_unattributed(d[Diag::kBpfSamplesUnattributed]),
      cgroup_unknown(d[Diag::kCgroupUnknown]),
      dispatch_unattributed(d[Diag::kBpfDispatchUnattributed]),
      cost_unproven(d[Diag::kBpfCostUnproven]) {
  for (size_t k = 1; k < kUnknownReasons; k++) {
    unknown[k] = d[symbols::unknown_frames_diag(static_cast<symbols::Unknown>(k))];
  }
}

SampleMemos::Key SampleMemos::key_of(const perf::Sample& s, bool kernel, bool stacks) {
  Key key;
  key.words = memo_words(s, kernel, stacks);
  if (key.words.empty()) return key;
  uint64_t h = mix(mix((uint64_t{s.pid} << 32) | s.tid, s.cgroup), kernel);
  for (size_t i = 0; i + 8 <= key.words.size(); i += 8) {
    h = (h ^ load_unaligned<uint64_t>(key.words.data() + i)) * 0x9e3779b97f4a7c15ULL;
  }
  key.hash = h ^ (h >> 29);
  return key;
}

SampleMemos::SampleMemos(uint64_t samples)
    : mask_(std::bit_ceil(std::clamp<uint64_t>(samples, 64, kMemos)) - 1),
      memos_(mask_ + 1),
      tails_(mask_ + 1) {}

profile::Counts* SampleMemos::find(const Key& key, const perf::Sample& s, bool kernel,
                                   DiagCounts& diag) const {
  if (key.words.empty()) return nullptr;
  const size_t at = key.hash & mask_;
  const Memo& m = memos_[at];
  const Bytes w = key.words;
  if (m.hash != key.hash || s.time < m.from || s.time >= m.to || m.pid != s.pid ||
      m.tid != s.tid || m.cgroup != s.cgroup || m.kernel != kernel || m.key_bytes != w.size() ||
      (w.size() == 8 ? load_unaligned<uint64_t>(w.data()) != m.leaf
                     : std::memcmp(w.data(), tails_[at].words.data(), w.size()) != 0)) {
    return nullptr;
  }
  if (m.unknowns) {
    const Tail& tail = tails_[at];
    for (size_t k = 1; k < kUnknownReasons; k++) {
      diag[symbols::unknown_frames_diag(static_cast<symbols::Unknown>(k))] += tail.unknown[k];
    }
  }
  diag[Diag::kBpfSamplesUnattributed] += m.bpf_unattributed;
  diag[Diag::kCgroupUnknown] += m.cgroup_unknown;
  diag[Diag::kBpfDispatchUnattributed] += m.dispatch_unattributed;
  diag[Diag::kBpfCostUnproven] += m.cost_unproven;
  return m.slot;
}

void SampleMemos::remember(const Key& key, const perf::Sample& s, bool kernel, profile::Counts* slot,
                           const symbols::Symbolizer::Holds& holds, const MemoCounts& before,
                           const MemoCounts& after) {
  if (key.words.empty() || holds.from > s.time || s.time >= holds.to) return;
  const size_t at = key.hash & mask_;
  Memo& m = memos_[at];
  Tail& tail = tails_[at];
  m.hash = key.hash;
  m.from = holds.from;
  m.to = holds.to;
  m.pid = s.pid;
  m.tid = s.tid;
  m.cgroup = s.cgroup;
  m.kernel = kernel;
  m.slot = slot;
  m.key_bytes = static_cast<uint16_t>(key.words.size());
  if (key.words.size() == 8) {
    m.leaf = load_unaligned<uint64_t>(key.words.data());
  } else {
    tail.words.assign(key.words.begin(), key.words.end());
  }
  // What this sample added to the diagnostics, replayed on a hit.
  m.unknowns = false;
  for (size_t k = 1; k < kUnknownReasons; k++) {
    tail.unknown[k] = static_cast<uint16_t>(after.unknown[k] - before.unknown[k]);
    m.unknowns = m.unknowns || tail.unknown[k] != 0;
  }
  m.bpf_unattributed = static_cast<uint8_t>(after.bpf_unattributed - before.bpf_unattributed);
  m.cgroup_unknown = static_cast<uint8_t>(after.cgroup_unknown - before.cgroup_unknown);
  m.dispatch_unattributed = static_cast<uint8_t>(after.dispatch_unattributed - before.dispatch_unattributed);
  m.cost_unproven = static_cast<uint8_t>(after.cost_unproven - before.cost_unproven);
}

}  // namespace bpfprof::analysis
