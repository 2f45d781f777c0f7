// SPDX-License-Identifier: Apache-2.0
// FlameTree: a Profile's stacks merged root first, the one model behind every
// export format (folded lines, JSON tree, SVG and HTML flame graphs). Frames
// are merged by (symbol, kind) at each level, so two instances of the same
// BPF program, or one symbol in two builds of a binary, share a node.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "profile/profile.h"

namespace bpfprof::exporter {

struct FlameNode {
  std::string_view name;  // the frame's symbol; "all" for the root
  profile::FrameKind kind = profile::FrameKind::kUnknown;
  uint64_t samples = 0;         // samples of the stacks through this node
  uint64_t self = 0;            // samples whose leaf is this node
  uint32_t depth = 0;           // 0 = root
  std::vector<uint32_t> children;  // node indices, ordered by (name, kind)
};

struct FlameOptions {
  bool bpf_only = false;  // keep stacks whose leaf is BPF code (program or trampoline)
};

// Node 0 is the root ("all", every kept sample). Names are views into the
// Profile the tree was built from: it must outlive the tree.
class FlameTree {
 public:
  static FlameTree build(const profile::Profile& profile, const FlameOptions& options);

  const FlameNode& root() const { return nodes_[0]; }
  const FlameNode& node(uint32_t id) const { return nodes_[id]; }
  size_t size() const { return nodes_.size(); }
  uint64_t total() const { return nodes_[0].samples; }
  // Deepest node's depth (0 when there are no frames).
  uint32_t max_depth() const { return max_depth_; }

 private:
  std::vector<FlameNode> nodes_;
  uint32_t max_depth_ = 0;
};

// "bpf", "bpf_image", "kernel", "module", "user", "unknown" (JSON `kind`, CSS class).
std::string_view kind_name(profile::FrameKind kind);
// The folded-stacks spelling of a frame: the symbol, with `_[k]` for kernel
// and module code and `_[bpf]` for BPF programs, trampolines and dispatchers;
// ';' and line breaks, which would split the line, become '_'.
std::string folded_frame(const FlameNode& node);

}  // namespace bpfprof::exporter
