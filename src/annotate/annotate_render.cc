// SPDX-License-Identifier: Apache-2.0
// annotate's renderers. Text: a header per program, then per function each
// source line (file:line, its samples, its text) with its instructions below
// (samples, percent, offset, disassembly); hot lines and instructions in
// colour on a terminal. JSON: the same tree (schema: docs/annotate.md, "JSON").
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "annotate/annotate.h"
#include "base/percent.h"

namespace bpfprof::annotate {
namespace {

using Json = nlohmann::ordered_json;

// Thresholds (percent of the program's samples) for colour on a terminal.
constexpr double kHot = 10.0, kWarm = 2.0;
constexpr const char* kRed = "\033[1;31m";
constexpr const char* kYellow = "\033[33m";
constexpr const char* kBold = "\033[1m";
constexpr const char* kReset = "\033[0m";

std::string paint(bool color, double percent, const std::string& s, const char* base = "") {
  if (!color) return s;
  const char* c = percent >= kHot ? kRed : percent >= kWarm ? kYellow : base;
  return *c ? fmt::format("{}{}{}", c, s, kReset) : s;
}

std::string where(const std::optional<uint32_t>& line, const std::string& file) {
  return line ? fmt::format("{}:{}", file, *line) : "[no line info]";
}

std::string selection(const Annotation& a, const Listing& l) {
  if (a.selected_by == SelectedBy::kId) return fmt::format("by id: instance {} only", l.ids.front());
  return fmt::format("by {}: all {} instance{} of this code (ids {})", selected_by_name(a.selected_by),
                     l.ids.size(), l.ids.size() == 1 ? "" : "s", fmt::join(l.ids, ", "));
}

void text_function(const AnnotatedFunction& f, uint64_t program_samples, bool color, std::string& out) {
  const double fp = percent_of_rounded(f.samples, program_samples);
  out += paint(color, fp, fmt::format("\n{}  len {}  samples {} ({:.2f}%)\n", f.name, f.len, f.samples, fp), kBold);
  out += "    samples  percent  offset  instruction\n";
  std::map<std::pair<std::string, std::optional<uint32_t>>, std::pair<uint64_t, int>> per_line;
  for (const LineBlock& b : f.blocks) {
    auto& [total, blocks] = per_line[{b.file, b.line}];
    total += b.samples;
    blocks++;
  }
  for (const LineBlock& b : f.blocks) {
    const double bp = percent_of_rounded(b.samples, program_samples);
    const auto& [total, blocks] = per_line[{b.file, b.line}];
    std::string head = fmt::format("  {:>9} {:>7.2f}%  {}", b.samples, bp, where(b.line, b.file));
    if (blocks > 1) {
      head += fmt::format("  (line total {}, {:.2f}%)", total,
                          percent_of_rounded(total, program_samples));
    }
    out += paint(color, bp, head, kBold) + "\n";
    if (b.line) out += fmt::format("{:>22}{}\n", "", b.text);
    for (const AnnotatedInsn& i : b.insns) {
      const double ip = percent_of_rounded(i.samples, program_samples);
      std::string count = i.samples ? fmt::format("{:>9} {:>7.2f}%", i.samples, ip) : fmt::format("{:>18}", "");
      std::string text = i.text;
      if (!i.target.empty()) text += fmt::format(" <{}>", i.target);
      if (i.callee_samples) text += fmt::format("  [callees {}]", i.callee_samples);
      out += paint(color, ip, fmt::format("  {}  {:>6x}  {}", count, i.offset, text)) + "\n";
    }
  }
}

}  // namespace

std::string render_annotate_text(const Annotation& a, bool color) {
  std::string out;
  for (const Listing& l : a.listings) {
    out += paint(color, 0, fmt::format("BPF program {}  tag {}  ({})\n", l.name, l.tag, selection(a, l)), kBold);
    out += fmt::format("samples {} ({:.2f}% of {}), arch {}", l.samples,
                       percent_of_rounded(l.samples, a.total_samples),
                       a.total_samples, a.arch);
    if (!l.unavailable.empty()) {
      out += fmt::format("\nno code to annotate: {}\n\n", l.unavailable);
      continue;
    }
    out += fmt::format(", code from the stored info of id {}{}\n", l.code_id,
                       l.has_lines ? "" : " (no line info or BTF stored: instructions only)");
    if (l.callee_samples) {
      out += fmt::format(
          "callee samples {} (helpers, maps, kfuncs it called: [callees N] at each call",
          l.callee_samples);
      if (l.callee_samples_not_at_call) {
        out +=
            fmt::format("; {} not at a call: an interrupt inside the program, or code not stored",
                        l.callee_samples_not_at_call);
      }
      out += ")\n";
    }
    if (l.samples_outside) {
      out += fmt::format("{} samples fell outside the stored code (functions or offsets it lacks)\n",
                         l.samples_outside);
    }
    for (const AnnotatedFunction& f : l.functions) text_function(f, l.samples, color, out);
    out += "\n";
  }
  return out;
}

std::string render_annotate_json(const Annotation& a) {
  auto line_json = [](const std::optional<uint32_t>& line) { return line ? Json(*line) : Json(nullptr); };
  Json programs = Json::array();
  for (const Listing& l : a.listings) {
    Json functions = Json::array();
    for (const AnnotatedFunction& f : l.functions) {
      Json lines = Json::array();
      for (const LineBlock& b : f.blocks) {
        Json insns = Json::array();
        for (const AnnotatedInsn& i : b.insns) {
          insns.push_back(Json{{"offset", i.offset}, {"size", i.size}, {"asm", i.text},
                               {"samples", i.samples},
                               {"percent", percent_of_rounded(i.samples, l.samples)},
                               {"target", i.target.empty() ? Json(nullptr) : Json(i.target)},
                               {"callee_samples", i.callee_samples}});
        }
        lines.push_back(Json{{"file", b.line ? Json(b.file) : Json(nullptr)}, {"line", line_json(b.line)},
                             {"text", b.line ? Json(b.text) : Json(nullptr)}, {"samples", b.samples},
                             {"percent", percent_of_rounded(b.samples, l.samples)},
                             {"insns", std::move(insns)}});
      }
      Json totals = Json::array();
      for (const LineTotal& t : f.line_totals) {
        totals.push_back(Json{{"file", t.line ? Json(t.file) : Json(nullptr)}, {"line", line_json(t.line)},
                              {"samples", t.samples},
                              {"percent", percent_of_rounded(t.samples, l.samples)}});
      }
      functions.push_back(Json{{"name", f.name}, {"len", f.len}, {"samples", f.samples},
                               {"callee_samples", f.callee_samples},
                               {"percent", percent_of_rounded(f.samples, l.samples)},
                               {"lines", std::move(lines)},
                               {"line_totals", std::move(totals)}});
    }
    programs.push_back(
        Json{{"name", l.name},
             {"tag", l.tag},
             {"ids", l.ids},
             {"code_id", l.unavailable.empty() ? Json(l.code_id) : Json(nullptr)},
             {"samples", l.samples},
             {"percent", percent_of_rounded(l.samples, a.total_samples)},
             {"samples_outside", l.samples_outside},
             {"callee_samples", l.callee_samples},
             {"callee_samples_not_at_call", l.callee_samples_not_at_call},
             {"has_lines", l.has_lines},
             {"unavailable", l.unavailable.empty() ? Json(nullptr) : Json(l.unavailable)},
             {"functions", std::move(functions)}});
  }
  Json out{{"query", a.query},
           {"selected_by", selected_by_name(a.selected_by)},
           {"arch", a.arch},
           {"samples", a.total_samples},
           {"programs", std::move(programs)}};
  // Invalid UTF-8 in recorded names or BTF source text becomes U+FFFD.
  return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace bpfprof::annotate
