// SPDX-License-Identifier: Apache-2.0
#include "export/flame_tree.h"

#include <algorithm>
#include <map>

#include "profile/group.h"

namespace bpfprof::exporter {
namespace {

using profile::FrameKind;

// Children while building: merged by (symbol, kind); the map's order is the
// order of the finished tree, so output does not depend on hash order.
struct Building {
  std::map<std::pair<std::string_view, FrameKind>, uint32_t> children;
};

}  // namespace

FlameTree FlameTree::build(const profile::Profile& profile, const FlameOptions& options) {
  FlameTree t;
  t.nodes_.push_back(FlameNode{"all", FrameKind::kUnknown, 0, 0, 0, {}});
  std::vector<Building> building(1);
  // Frames of an empty stack (a sample with neither ip nor callchain) still
  // count, under one [unknown] frame, so the root equals the kept samples.
  static const profile::Frame kUnknownFrame;
  for (const auto& [key, counts] : profile.samples()) {
    const profile::Frame* leaf = profile.leaf(key.stack);
    if (options.bpf_only && !profile::is_bpf_leaf(leaf)) continue;
    std::span<const profile::FrameId> stack = profile.stack(key.stack);
    const uint64_t n = counts.samples;
    t.nodes_[0].samples += n;
    uint32_t at = 0;
    const size_t frames = std::max<size_t>(stack.size(), 1);
    for (size_t i = frames; i-- > 0;) {  // leaf first in the profile, root first here
      const profile::Frame& f = stack.empty() ? kUnknownFrame : profile.frame(stack[i]);
      auto [it, added] = building[at].children.try_emplace({f.symbol, f.kind}, 0);
      if (added) {
        it->second = static_cast<uint32_t>(t.nodes_.size());
        const uint32_t depth = t.nodes_[at].depth + 1;
        t.nodes_.push_back(FlameNode{f.symbol, f.kind, 0, 0, depth, {}});
        t.max_depth_ = std::max(t.max_depth_, depth);
      }
      at = it->second;
      // After `it` is last used: growing `building` may move the maps.
      if (added) building.emplace_back();
      t.nodes_[at].samples += n;
    }
    t.nodes_[at].self += n;
  }
  for (size_t i = 0; i < building.size(); i++) {
    for (const auto& [key, child] : building[i].children) t.nodes_[i].children.push_back(child);
  }
  return t;
}

std::string_view kind_name(FrameKind kind) {
  switch (kind) {
    case FrameKind::kBpf: return "bpf";
    case FrameKind::kBpfImage: return "bpf_image";
    case FrameKind::kKernel: return "kernel";
    case FrameKind::kModule: return "module";
    case FrameKind::kUser: return "user";
    case FrameKind::kUnknown: return "unknown";
  }
  return "unknown";
}

std::string folded_frame(const FlameNode& node) {
  std::string s(node.name);
  for (char& c : s) {
    if (c == ';' || c == '\n' || c == '\r') c = '_';
  }
  switch (node.kind) {
    case FrameKind::kKernel:
    case FrameKind::kModule: s += "_[k]"; break;
    case FrameKind::kBpf:
    case FrameKind::kBpfImage: s += "_[bpf]"; break;
    default: break;
  }
  return s;
}

}  // namespace bpfprof::exporter
