// SPDX-License-Identifier: Apache-2.0
#include "compare/merge.h"

#include <map>

#include <fmt/format.h>

#include "profile/group.h"

namespace bpfprof::compare {

namespace {

// The spelling of `bpfprof export --format folded`, so merged and single
// files feed the same scripts: kernel and module code get `_[k]`, BPF code
// `_[bpf]`; ';' and line breaks, which would split the line, become '_'.
void append_frame(std::string& line, const profile::Frame& f) {
  for (char c : f.symbol) line += c == ';' || c == '\n' || c == '\r' ? '_' : c;
  switch (f.kind) {
    case profile::FrameKind::kKernel:
    case profile::FrameKind::kModule: line += "_[k]"; break;
    case profile::FrameKind::kBpf:
    case profile::FrameKind::kBpfImage: line += "_[bpf]"; break;
    default: break;
  }
}

}  // namespace

std::string program_key(const analysis::ProgramRow& program) {
  return program.name + " " + program.tag;
}

std::string render_folded_merged(std::span<const analysis::ReportData* const> recordings,
                                 bool bpf_only) {
  std::map<std::string, uint64_t> stacks;
  std::string line;
  for (const analysis::ReportData* data : recordings) {
    const profile::Profile& p = data->profile;
    for (const auto& [key, counts] : p.samples()) {
      if (bpf_only && !profile::is_bpf_leaf(p.leaf(key.stack))) continue;
      std::span<const profile::FrameId> frames = p.stack(key.stack);
      line.clear();
      // Profile stacks are leaf first; folded lines are root first.
      for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
        if (!line.empty()) line += ';';
        append_frame(line, p.frame(*it));
      }
      if (line.empty()) line = "[unknown]";
      stacks[line] += counts.samples;
    }
  }
  std::string out;
  for (const auto& [stack, samples] : stacks) out += fmt::format("{} {}\n", stack, samples);
  return out;
}

}  // namespace bpfprof::compare
