// SPDX-License-Identifier: Apache-2.0
#include "export/flamegraph_svg.h"

#include <cmath>

#include <fmt/format.h>

#include "export/flamegraph_assets.h"
#include "report/table.h"

namespace bpfprof::exporter {
namespace {

using profile::FrameKind;

// Labels use an 11px monospace font; this is its advance in Chromium's
// default (DejaVu Sans Mono: 0.602 em), so a label fits without measuring.
constexpr double kCharWidth = 6.7;
constexpr double kTextInset = 3;

// Length of the valid UTF-8 sequence at the start of `s`, 0 if invalid.
size_t utf8_length(std::string_view s) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;  // overlong
    if (c == 0xed) hi = 0x9f;  // surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;  // above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < n || b(1) < lo || b(1) > hi) return 0;
  for (size_t i = 2; i < n; i++) {
    if (b(i) < 0x80 || b(i) > 0xbf) return 0;
  }
  return n;
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

Rgb hsl(double h, double s, double l) {
  const double c = (1 - std::fabs(2 * l - 1)) * s;
  const double hp = std::fmod(h, 360.0) / 60.0;
  const double x = c * (1 - std::fabs(std::fmod(hp, 2.0) - 1));
  double r = 0, g = 0, b = 0;
  if (hp < 1) { r = c; g = x; }
  else if (hp < 2) { r = x; g = c; }
  else if (hp < 3) { g = c; b = x; }
  else if (hp < 4) { g = x; b = c; }
  else if (hp < 5) { r = x; b = c; }
  else { r = c; b = x; }
  const double m = l - c / 2;
  auto to8 = [&](double v) { return static_cast<uint8_t>(std::lround((v + m) * 255)); };
  return Rgb{to8(r), to8(g), to8(b)};
}

// The label that fits `width` px: the whole name, or its start and "..",
// or nothing below three characters.
std::string fit_label(std::string_view name, double width) {
  const double room = (width - 2 * kTextInset) / kCharWidth;
  if (room < 3) return "";
  const size_t chars = static_cast<size_t>(room);
  if (name.size() <= chars) return xml_text(name);
  size_t cut = chars - 2;
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xc0) == 0x80) cut--;
  return xml_text(name.substr(0, cut)) + "..";
}

struct Layout {
  const FlameTree& tree;
  const SvgOptions& options;
  double plot = 0, top = 0;
  uint32_t rows = 1;
  std::string out;

  void frame(uint32_t id, uint64_t x) {
    const FlameNode& n = tree.node(id);
    const double scale = plot / static_cast<double>(tree.total());
    const double w = static_cast<double>(n.samples) * scale;
    if (w < options.min_width_px) return;
    const double px = kSvgPad + static_cast<double>(x) * scale;
    const double y = top + (rows - 1 - n.depth) * kFrameHeight;
    const Rgb fill = id == 0 ? Rgb{200, 200, 200} : frame_colour(n.kind, n.name);
    fmt::format_to(std::back_inserter(out),
                   "<g class=\"f {}\" data-x=\"{}\" data-w=\"{}\" data-d=\"{}\">"
                   "<title>{} ({} samples, {})</title>"
                   "<rect x=\"{:.2f}\" y=\"{:.0f}\" width=\"{:.2f}\" height=\"{:.0f}\" "
                   "fill=\"rgb({},{},{})\" rx=\"2\"/>"
                   "<text x=\"{:.2f}\" y=\"{:.0f}\">{}</text></g>\n",
                   id == 0 ? "root" : kind_name(n.kind), x, n.samples, n.depth, xml_text(n.name),
                   n.samples, report::percent(n.samples, tree.total()), px, y, w, kFrameHeight - 1,
                   fill.r, fill.g, fill.b, px + kTextInset, y + kFrameHeight - 4,
                   fit_label(n.name, w));
    for (uint32_t c : n.children) {
      frame(c, x);
      x += tree.node(c).samples;
    }
  }
};

}  // namespace

Rgb frame_colour(FrameKind kind, std::string_view name) {
  const uint64_t h = fnv1a(name);
  const double v1 = static_cast<double>(h & 0xffff) / 65536.0;
  const double v2 = static_cast<double>((h >> 16) & 0xffff) / 65536.0;
  switch (kind) {
    case FrameKind::kBpf: return hsl(222 + 48 * v1, 0.62, 0.60 + 0.08 * v2);
    case FrameKind::kBpfImage: return hsl(272 + 16 * v1, 0.45, 0.72 + 0.06 * v2);
    case FrameKind::kKernel:
    case FrameKind::kModule: return hsl(24 + 16 * v1, 0.85, 0.55 + 0.08 * v2);
    case FrameKind::kUser: return hsl(0 + 14 * v1, 0.72, 0.58 + 0.08 * v2);
    case FrameKind::kUnknown: break;
  }
  return hsl(0, 0, 0.70 + 0.08 * v2);
}

std::string xml_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t n = utf8_length(s.substr(i));
      if (n == 0) {
        out += '?';
        i++;
      } else {
        out.append(s.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += (c < 0x20 && c != '\t') || c == 0x7f ? '?' : static_cast<char>(c);
    }
    i++;
  }
  return out;
}

std::string render_svg(const FlameTree& tree, const SvgOptions& o) {
  Layout l{tree, o};
  l.plot = o.width - 2 * kSvgPad;
  l.rows = tree.max_depth() + 1;
  l.top = o.standalone ? 48 : 4;
  const double bottom = o.standalone ? 24 : 4;
  const double height = l.top + l.rows * kFrameHeight + bottom;
  std::string& out = l.out;
  if (o.standalone) out += "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n";
  fmt::format_to(std::back_inserter(out),
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" class=\"bpfprof-flame\" "
                 "width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" data-total=\"{2}\" "
                 "data-pad=\"{3}\" data-frame-h=\"{4}\" data-rows=\"{5}\">\n"
                 "<style>{6}</style>\n"
                 "<rect class=\"bg\" x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\"/>\n",
                 o.width, height, tree.total(), kSvgPad, kFrameHeight, l.rows,
                 assets::flamegraph_svg_css);
  if (o.standalone) {
    fmt::format_to(std::back_inserter(out),
                   "<text class=\"title\" x=\"{}\" y=\"22\">{}</text>\n"
                   "<text class=\"subtitle\" x=\"{}\" y=\"38\">{}</text>\n"
                   "<text id=\"reset\" class=\"button\" x=\"{}\" y=\"22\">Reset zoom</text>\n"
                   "<text id=\"details\" x=\"{}\" y=\"{}\"> </text>\n",
                   o.width / 2, xml_text(o.title), o.width / 2, xml_text(o.subtitle), kSvgPad,
                   kSvgPad, height - 8);
  }
  out += "<g id=\"frames\">\n";
  if (tree.total() == 0) {
    fmt::format_to(std::back_inserter(out), "<text class=\"empty\" x=\"{}\" y=\"{}\">No samples</text>\n",
                   o.width / 2, l.top + kFrameHeight - 4);
  } else {
    l.frame(0, 0);
  }
  out += "</g>\n";
  if (o.standalone) {
    // CDATA keeps the script's '<' and '&' out of the XML parser's way.
    out += "<script type=\"text/ecmascript\"><![CDATA[\n";
    out += assets::flamegraph_js;
    out += "]]></script>\n";
  }
  out += "</svg>\n";
  return out;
}

}  // namespace bpfprof::exporter
