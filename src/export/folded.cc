// SPDX-License-Identifier: Apache-2.0
#include "export/folded.h"

#include <map>

#include <fmt/format.h>

namespace bpfprof::exporter {
namespace {

// Two nodes may fold to the same line (one symbol as kernel and as module
// text, both `_[k]`): the map adds them up and sorts the lines.
void collect(const FlameTree& tree, uint32_t id, std::string& path,
             std::map<std::string, uint64_t>& lines) {
  const FlameNode& n = tree.node(id);
  const size_t keep = path.size();
  if (id != 0) {
    if (!path.empty()) path += ';';
    path += folded_frame(n);
    if (n.self > 0) lines[path] += n.self;
  }
  for (uint32_t c : n.children) collect(tree, c, path, lines);
  path.resize(keep);
}

}  // namespace

std::string render_folded(const FlameTree& tree) {
  std::map<std::string, uint64_t> lines;
  std::string path;
  collect(tree, 0, path, lines);
  std::string out;
  for (const auto& [stack, samples] : lines) fmt::format_to(std::back_inserter(out), "{} {}\n", stack, samples);
  return out;
}

}  // namespace bpfprof::exporter
