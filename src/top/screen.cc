// SPDX-License-Identifier: Apache-2.0
#include "top/screen.h"

#include <set>

#include <fmt/format.h>

#include "report/program_groups.h"

namespace bpfprof::top {
namespace {

std::string count_or_dash(const std::optional<uint64_t>& v) {
  return v ? fmt::format("{}", *v) : "-";
}

std::string real_or_dash(const std::optional<double>& v, int decimals) {
  return v ? fmt::format("{:.{}f}", *v, decimals) : "-";
}

const char* kind_name(symbols::FrameKind k) {
  switch (k) {
    case symbols::FrameKind::kBpf: return "bpf";
    case symbols::FrameKind::kBpfImage: return "bpf";
    case symbols::FrameKind::kKernel: return "k";
    case symbols::FrameKind::kModule: return "k";
    case symbols::FrameKind::kUser: return "u";
    case symbols::FrameKind::kUnknown: return "?";
  }
  return "?";
}

// The IDS cell: longer id lists are cut (--format json has every id).
constexpr size_t kIdsWidth = 12;

// A group's ids in the IDS cell. A single range wider than the cell (ids of
// seven digits and more) would shift every column after it: the lowest id
// and, after ",+", how many others there are.
std::string ids_cell(const std::vector<uint32_t>& ids) {
  std::string cell = report::id_list(ids, kIdsWidth);
  if (cell.size() <= kIdsWidth || ids.empty()) return cell;
  std::set<uint32_t> distinct(ids.begin(), ids.end());
  return fmt::format("{},+{}", *distinct.begin(), distinct.size() - 1);
}

void add(std::vector<Line>& out, std::string text, Line::Style style, size_t width) {
  // Cut on a byte boundary is fine: names are ASCII (kernel, BPF and ELF symbols).
  if (width && text.size() > width) text.resize(width);
  out.push_back(Line{std::move(text), style});
}

std::string status_line(const Model& model, const ViewState& view, const SessionInfo& info) {
  const Interval& iv = model.last();
  std::string stats = info.run_stats ? "BPF stats on" : "BPF stats off";
  return fmt::format(
      "bpfprof top  refresh {}  {:.2f} s  {} samples  {} lost  {} @ {} Hz on {} CPUs  {}  "
      "sort {}{}{}  (symbols {:.0f} ms)",
      model.refreshes(), iv.seconds, iv.samples, iv.lost, info.event, info.frequency, info.cpus,
      stats, sort_key_name(view.sort), view.instances ? "  instances" : "",
      view.bpf_only ? "  BPF-only" : "", info.symbolizer_ms);
}

}  // namespace

std::vector<Line> format_screen(const Model& model, const ViewState& view,
                                const SessionInfo& info, const ScreenSize& size) {
  std::vector<Line> out;
  const size_t w = size.width;
  add(out, status_line(model, view, info), Line::Style::kTitle, w);
  if (!info.run_stats && !info.run_stats_note.empty()) {
    add(out, info.run_stats_note, Line::Style::kNormal, w);
  }
  add(out, "", Line::Style::kNormal, w);

  const std::vector<ProgramRow> programs = model.programs(view.sort, view.instances);
  // Grouped: instances and their ids; --instances (key i): the one id. The
  // program's name, gone mark included, before owner and attach point (the
  // longest cell, last: a narrow screen cuts it, not the figures).
  const std::string ids_heading =
      view.instances ? fmt::format("{:>7}", "ID") : fmt::format("{:>4} {:>12}", "INST", "IDS");
  add(out,
      fmt::format("{:>7} {:>7} {:>8} {:>10} {:>11} {:>9} {}  {:<23}  {:<22}  {}", "TOTAL%",
                  "CPU%", "SAMPLES", "RUNS", "RUNS/s", "AVG ns", ids_heading, "BPF PROGRAM", "OWNER", "ATTACH"),
      Line::Style::kHeading, w);
  size_t shown = 0;
  for (const ProgramRow& p : programs) {
    if (size.program_rows && shown == size.program_rows) {
      add(out, fmt::format("  ... {} more programs", programs.size() - shown),
          Line::Style::kNormal, w);
      break;
    }
    const std::string ids = view.instances
                                ? fmt::format("{:>7}", p.id)
                                : fmt::format("{:>4} {:>12}", p.ids.size(), ids_cell(p.ids));
    add(out,
        fmt::format("{:>6.2f}% {:>6.2f}% {:>8} {:>10} {:>11} {:>9} {}  {:<23}  {:<22}  {}",
                    p.total_percent, p.cpu_percent, p.samples, count_or_dash(p.runs), real_or_dash(p.runs_per_s, 1),
                    real_or_dash(p.avg_ns, 0), ids, p.gone ? p.name + "  [gone]" : p.name,
                    p.owner, p.attach),
        p.gone ? Line::Style::kGone : Line::Style::kNormal, w);
    shown++;
  }
  if (programs.empty()) add(out, "  (no BPF programs loaded)", Line::Style::kNormal, w);

  add(out, "", Line::Style::kNormal, w);
  add(out,
      fmt::format("{:>7} {:>8} {:>3}  {:<48} {}", "CPU%", "SAMPLES", "",
                  view.bpf_only ? "BPF SYMBOL" : "SYMBOL", "DSO"),
      Line::Style::kHeading, w);
  for (const SymbolRow& s : model.symbols(view.bpf_only, size.symbol_rows)) {
    add(out,
        fmt::format("{:>6.2f}% {:>8} {:>3}  {:<48} {}", s.cpu_percent, s.samples,
                    kind_name(s.kind), s.name, s.dso),
        Line::Style::kNormal, w);
  }
  return out;
}

std::vector<Line> format_waiting(const SessionInfo& info, double refresh_s) {
  return {Line{fmt::format("bpfprof top  {} @ {} Hz on {} CPUs  collecting for {:.1f} s ...",
                           info.event, info.frequency, info.cpus, refresh_s),
               Line::Style::kTitle}};
}

}  // namespace bpfprof::top
