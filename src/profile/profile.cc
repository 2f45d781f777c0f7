// SPDX-License-Identifier: Apache-2.0
#include "profile/profile.h"

#include <functional>

namespace bpfprof::profile {
namespace {

inline size_t mix(size_t h, size_t v) {
  // boost::hash_combine's constant: spreads small integers over the word.
  return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

}  // namespace

size_t FrameHash::operator()(const Frame& f) const {
  std::hash<std::string_view> hs;
  size_t h = hs(f.symbol);
  h = mix(h, hs(f.dso));
  h = mix(h, hs(f.line));
  h = mix(h, static_cast<size_t>(f.kind));
  h = mix(h, f.bpf_program);
  return mix(h, f.bpf_function);
}

size_t StackHash::operator()(const std::vector<FrameId>& s) const {
  size_t h = s.size();
  for (FrameId id : s) h = mix(h, id);
  return h;
}

size_t SampleKeyHash::operator()(const SampleKey& k) const {
  size_t h = mix(k.stack, k.thread.pid);
  h = mix(h, k.thread.tid);
  h = mix(h, std::hash<std::string_view>()(k.thread.cgroup));
  h = mix(h, k.charge);
  return mix(h, std::hash<std::string_view>()(k.thread.comm));
}

size_t ChargeHash::operator()(const Charge& c) const {
  size_t h = static_cast<size_t>(c.kind);
  for (uint32_t p : c.programs) h = mix(h, p);
  return h;
}

ChargeId Profile::add_charge(const Charge& charge) {
  auto it = charge_index_.find(charge);
  if (it != charge_index_.end()) return it->second;
  const ChargeId id = static_cast<ChargeId>(charges_.size() + 1);
  auto [pos, inserted] = charge_index_.emplace(charge, id);
  charges_.push_back(&pos->first);
  return id;
}

FrameId Profile::add_frame(const Frame& frame) {
  auto it = frame_index_.find(frame);
  if (it != frame_index_.end()) return it->second;
  Frame stored = frame;
  stored.symbol = strings_.intern(frame.symbol);
  stored.dso = strings_.intern(frame.dso);
  stored.line = strings_.intern(frame.line);
  FrameId id = static_cast<FrameId>(frames_.size());
  auto [pos, inserted] = frame_index_.emplace(stored, id);
  frames_.push_back(&pos->first);
  return id;
}

StackId Profile::add_stack(const std::vector<FrameId>& leaf_first) {
  auto it = stack_index_.find(leaf_first);
  if (it != stack_index_.end()) return it->second;
  StackId id = static_cast<StackId>(stacks_.size());
  auto [pos, inserted] = stack_index_.emplace(leaf_first, id);
  stacks_.push_back(&pos->first);
  return id;
}

Counts& Profile::slot(StackId stack, const Thread& thread, ChargeId charge) {
  SampleKey key{stack, thread, charge};
  auto it = samples_.find(key);
  if (it == samples_.end()) {
    key.thread.comm = strings_.intern(thread.comm);
    key.thread.cgroup = strings_.intern(thread.cgroup);
    it = samples_.emplace(key, Counts{}).first;
  }
  return it->second;
}

const Frame* Profile::leaf(StackId id) const {
  const auto& s = *stacks_[id];
  return s.empty() ? nullptr : frames_[s.front()];
}

void Profile::merge(const Profile& other) {
  std::vector<FrameId> frame_map(other.frames_.size());
  for (size_t i = 0; i < other.frames_.size(); i++) frame_map[i] = add_frame(*other.frames_[i]);
  std::vector<StackId> stack_map(other.stacks_.size());
  std::vector<FrameId> buf;
  for (size_t i = 0; i < other.stacks_.size(); i++) {
    buf.clear();
    for (FrameId f : *other.stacks_[i]) buf.push_back(frame_map[f]);
    stack_map[i] = add_stack(buf);
  }
  std::vector<ChargeId> charge_map(other.charges_.size() + 1, 0);
  for (size_t i = 0; i < other.charges_.size(); i++) charge_map[i + 1] = add_charge(*other.charges_[i]);
  for (const auto& [key, counts] : other.samples_) {
    SampleKey mapped{stack_map[key.stack], key.thread, charge_map[key.charge]};
    auto it = samples_.find(mapped);
    if (it == samples_.end()) {
      mapped.thread.comm = strings_.intern(key.thread.comm);
      mapped.thread.cgroup = strings_.intern(key.thread.cgroup);
      it = samples_.emplace(mapped, Counts{}).first;
    }
    it->second += counts;
  }
  total_ += other.total_;
  if (other.first_time_ != 0 && (first_time_ == 0 || other.first_time_ < first_time_)) {
    first_time_ = other.first_time_;
  }
  if (other.last_time_ > last_time_) last_time_ = other.last_time_;
  diagnostics_ += other.diagnostics_;
}

}  // namespace bpfprof::profile
