// SPDX-License-Identifier: Apache-2.0
#include "export/flamegraph_html.h"

#include <utility>

#include <fmt/format.h>

#include "export/flamegraph_assets.h"
#include "export/flamegraph_svg.h"

namespace bpfprof::exporter {
namespace {

using profile::FrameKind;

// The legend shows each family's colour as its frames get it.
std::string legend() {
  const std::pair<FrameKind, const char*> entries[] = {
      {FrameKind::kBpf, "BPF program"},
      {FrameKind::kBpfImage, "BPF trampoline / dispatcher"},
      {FrameKind::kKernel, "kernel"},
      {FrameKind::kUser, "user"},
      {FrameKind::kUnknown, "unknown"},
  };
  std::string out = "<div class=\"legend\">";
  for (const auto& [kind, text] : entries) {
    const Rgb c = frame_colour(kind, "");
    fmt::format_to(std::back_inserter(out),
                   "<span><span class=\"swatch\" style=\"background:rgb({},{},{})\"></span>{}</span>",
                   c.r, c.g, c.b, text);
  }
  return out + "</div>";
}

}  // namespace

std::string render_html(const FlameTree& tree, const HtmlOptions& options) {
  SvgOptions svg;
  svg.standalone = false;
  std::string out;
  fmt::format_to(std::back_inserter(out),
                 "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                 "<title>{0}</title>\n<style>\n{1}</style>\n</head>\n<body>\n"
                 "<header>\n<h1>{0}</h1>\n<div class=\"subtitle\">{2}</div>\n"
                 "<div class=\"controls\">"
                 "<input id=\"search\" type=\"search\" placeholder=\"Search (regular expression)\" "
                 "autocomplete=\"off\" spellcheck=\"false\">"
                 "<button id=\"reset\" type=\"button\">Reset</button>"
                 "<span id=\"matched\"></span></div>\n{3}\n</header>\n<main id=\"graph\">\n",
                 xml_text(options.title), assets::flamegraph_page_css, xml_text(options.subtitle),
                 legend());
  out += render_svg(tree, svg);
  out += "</main>\n<div id=\"details\">&nbsp;</div>\n<script>\n";
  out += assets::flamegraph_js;
  out += "</script>\n<script>\n";
  out += assets::flamegraph_page_js;
  out += "</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace bpfprof::exporter
