// SPDX-License-Identifier: Apache-2.0
// The flame graph as one self-contained HTML page: the SVG inline, its script
// and styles inline, nothing fetched. Click to zoom, search with highlight and
// the matched share of samples, ?search=<regex> in the URL applied on load,
// Reset, hover details. Frames are the SVG's <g class="f ..."> elements.
#pragma once

#include <string>

#include "export/flame_tree.h"

namespace bpfprof::exporter {

struct HtmlOptions {
  std::string title = "bpfprof flame graph";
  std::string subtitle;  // one line under the title (input, samples)
};

std::string render_html(const FlameTree& tree, const HtmlOptions& options);

}  // namespace bpfprof::exporter
