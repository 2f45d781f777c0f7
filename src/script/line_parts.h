// SPDX-License-Identifier: Apache-2.0
// What the forms of a script line share (line_format.cc: the one-line and
// perf layouts; json_line.cc: JSON): the room a line reserves, the parts
// every form prints the same way, and the JSON form's entry.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "script/line_format.h"

namespace bpfprof::script {

// A line reserves kLineFixed bytes for its fixed text and numbers plus its
// strings' sizes; that leaves the kPad bytes the field writers may write past
// their end spare.
inline constexpr size_t kLineFixed = 384;

// The leaf of a sample without frames.
inline const symbols::Frame kNoFrame{};

// A pid or tid as perf prints it: signed (the kernel reports -1 for a task
// that is past its pid's release, such as one sampled in its own exit).
inline int32_t signed_id(uint32_t id) { return static_cast<int32_t>(id); }

inline bool is_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// Whether `ip` has an offset into a symbol of `leaf` to print.
inline bool offset_known(const symbols::Frame& leaf, uint64_t ip) {
  return leaf.kind != symbols::FrameKind::kUnknown && leaf.unknown == symbols::Unknown::kNone &&
         leaf.symbol_start <= ip;
}

// The JSON object of `sample` (parsed from `ref`), with its callchain as an
// array when options.callchain (json_line.cc).
void format_json(const analysis::Session& session, const analysis::OrderedSample& ref,
                 const perf::Sample& sample, const ScriptOptions& options, LineScratch& scratch,
                 TextBuffer& out);

}  // namespace bpfprof::script
