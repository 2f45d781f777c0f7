// SPDX-License-Identifier: Apache-2.0
// The flame graph as SVG: root at the bottom, each frame above its caller,
// width proportional to its samples, siblings in the folded order. Every
// frame is a <g class="f KIND" data-x data-w data-d> (start and width in
// samples, depth) holding a <title> ("name (N samples, P%)"), a <rect> and a
// <text> label, so the page script and tests can read the layout back. A
// standalone SVG carries its own zoom script (no network, no external files).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "export/flame_tree.h"

namespace bpfprof::exporter {

struct SvgOptions {
  std::string title = "bpfprof flame graph";
  std::string subtitle;       // one line under the title (input, samples)
  double width = 1200;        // image width in px
  double min_width_px = 0.1;  // narrower frames (and their callees) are left out
  bool standalone = true;     // XML prolog, zoom script and details line; false: for HTML
};

// Layout constants the page script reads back from the <svg> data attributes.
inline constexpr double kSvgPad = 10;      // left and right margin
inline constexpr double kFrameHeight = 16;

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};

// A frame's fill: a colour family per kind — blue to violet for BPF programs
// (lighter violet for trampolines and dispatchers), orange for kernel and
// module code, red for user code, grey for unknown — varied within the family
// by a hash of the name, so one symbol has one colour everywhere.
Rgb frame_colour(profile::FrameKind kind, std::string_view name);

std::string render_svg(const FlameTree& tree, const SvgOptions& options);

// Text safe inside XML (and HTML) content and attribute values: markup
// characters escaped, control bytes and invalid UTF-8 replaced by '?'.
std::string xml_text(std::string_view s);

}  // namespace bpfprof::exporter
