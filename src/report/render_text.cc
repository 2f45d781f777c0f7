// SPDX-License-Identifier: Apache-2.0
// The text report.
#include <algorithm>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/diagnostics.h"
#include "base/percent.h"
#include "report/program_groups.h"
#include "report/render.h"
#include "report/table.h"

namespace bpfprof::report {
namespace {

using profile::SortKey;

// `s` in double quotes, its quotes and backslashes escaped, as bpftool prints
// a string.
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + '"';
}

// "# enrichment: user-space enricher (SCHED_FIFO), 118 of 120 programs
// stored, 2 gone before enrichment" and, with run statistics, a line saying so.
std::string enrichment_text(const analysis::EnrichmentSummary& e) {
  std::string out;
  if (!e.path.empty() && e.in_kernel == "used") {
    out += fmt::format("# enrichment: {}, {} of {} programs stored ({} captured at load, {} "
                       "enriched by id), {} gone before enrichment",
                       e.path, e.stored, e.programs, e.captured, e.enriched_by_id, e.gone);
    if (e.capture_lost) out += fmt::format(", capture ring full {} times", e.capture_lost);
    out += e.max_hold_ns ? fmt::format("; references held up to {:.0f} \u00b5s\n",
                                       static_cast<double>(e.max_hold_ns) / 1e3)
                         : std::string("; no reference held\n");
  } else if (!e.path.empty()) {
    out += fmt::format("# enrichment: {}, {} of {} programs stored, {} gone before enrichment", e.path,
                       e.stored, e.programs, e.gone);
    if (e.lost) out += fmt::format(", {} enricher records lost", e.lost);
    out += e.v1 ? fmt::format("; in-kernel path {}\n", e.in_kernel)
                : fmt::format("; in-kernel capture {}\n", e.in_kernel);
  }
  if (e.bpf_stats) {
    out += fmt::format("# bpf stats: on (measured by the kernel, ~20 ns per run; an unloaded program "
                       "shows its last poll, every {} ms or more, '-' if none)\n",
                       e.stats_poll_ns / 1'000'000);
  }
  return out;
}

std::string header_text(const analysis::ReportData& d) {
  const analysis::Header& h = d.header;
  std::string out = "# bpfprof report\n";
  out += fmt::format("# host: {}  kernel: {}  arch: {}\n", h.host.empty() ? "?" : h.host,
                     h.kernel.empty() ? "?" : h.kernel, h.arch.empty() ? "?" : h.arch);
  if (!h.recorded_by.empty()) out += fmt::format("# recorded by: {}\n", h.recorded_by);
  out += fmt::format("# events: {}\n", fmt::join(h.events, ", "));
  out += fmt::format("# duration: {:.6f} s  samples: {}  lost: {}  throttled: {}\n",
                     static_cast<double>(h.duration_ns()) / 1e9, d.profile.total().samples, h.lost,
                     h.throttled);
  if (!h.kernel_symbols.empty()) out += fmt::format("# kernel symbols: {}\n", h.kernel_symbols);
  if (d.enrichment) out += enrichment_text(*d.enrichment);
  return out;
}

// The Ids cell: long lists are cut (the JSON report has every id).
constexpr size_t kIdsWidth = 24;

std::string programs_text(const analysis::ReportData& d, const RenderOptions& o) {
  std::string out =
      "#\n# BPF programs: samples in the program (Self), under it (Callees: helpers, maps, "
      "kfuncs)\n# and in the hook that runs it (Dispatch); Total = their sum; Percent: of "
      "all samples, by " +
      std::string(o.cost_total ? "Total" : "Self") + " (docs/cost.md)\n";
  if (d.programs.empty()) return out + "# (no BPF programs in this recording)\n";
  if (!d.callchains) {
    out += "# callees and dispatch: not measured, the recording has no callchains (record with "
           "-g or bpfprof record's default); cost is self only\n";
  }
  // Who pays: every owner's BPF samples in one line.
  std::vector<std::string> owners;
  for (const analysis::OwnerCost& c : analysis::cost_by_owner(d, o.cost_total)) {
    // With the owner's cgroup where the recording names it.
    const std::string in = c.cgroups == "[unknown]" ? std::string() : " in " + c.cgroups;
    owners.push_back(fmt::format("{}{} {} ({}{})", c.owner, in,
                                 percent(c.samples, d.profile.total().samples),
                                 c.estimated ? "~" : "", c.samples));
  }
  out += fmt::format("# BPF cost by owner ({}): {}\n", o.cost_total ? "total" : "self",
                     owners.empty() ? "none" : fmt::format("{}", fmt::join(owners, ", ")));
  bool any_estimated = false;
  for (const analysis::ProgramRow& p : d.programs) any_estimated = any_estimated || p.dispatch_estimated;
  if (any_estimated && o.cost_total) {
    out += "# ~: dispatch of a hook several programs share, split by their self + callees "
           "(estimated)\n";
  }
  // With run statistics: what the kernel measured, beside the sampled share.
  const bool stats = d.enrichment && d.enrichment->bpf_stats;
  std::vector<Table::Column> columns{{"Self", Table::Align::kRight},
                                     {"Callees", Table::Align::kRight},
                                     {"Dispatch", Table::Align::kRight},
                                     {"Total", Table::Align::kRight},
                                     {"Percent", Table::Align::kRight}};
  if (stats) {
    columns.insert(columns.end(), {{"Runs", Table::Align::kRight},
                                   {"Run ms", Table::Align::kRight},
                                   {"ns/run", Table::Align::kRight}});
  }
  if (o.instances) {
    columns.insert(columns.end(), {{"Id", Table::Align::kRight}, {"Tag"}, {"Loaded"}, {"Unloaded"}});
  } else {
    columns.insert(columns.end(), {{"Inst", Table::Align::kRight},
                                   {"Ids", Table::Align::kRight},
                                   {"Tag"},
                                   {"First load"},
                                   {"Last unload"}});
  }
  if (o.verbose) {
    columns.insert(columns.end(), {{"JIT bytes", Table::Align::kRight},
                                   {"Xlated bytes", Table::Align::kRight},
                                   {"Verified insns", Table::Align::kRight}});
  }
  columns.push_back({"Attach"});
  columns.push_back({"Program / functions"});
  const size_t width = columns.size();
  Table t(std::move(columns));
  const uint64_t total = d.profile.total().samples;
  for (const ProgramGroup& g : program_groups(d, o.instances, o.cost_total)) {
    const analysis::ProgramRow& p = g.row;
    std::vector<std::string> cells{
        std::to_string(p.samples),
        d.callchains ? std::to_string(p.callee_samples) : "-",
        d.callchains ? fmt::format("{}{}", p.dispatch_estimated ? "~" : "", p.dispatch_samples)
                     : "-",
        std::to_string(p.total_samples()), percent(p.cost(o.cost_total), total)};
    if (stats) {
      const bool known = p.run_cnt && p.run_time_ns;
      cells.push_back(known ? std::to_string(*p.run_cnt) : "-");
      cells.push_back(known ? fmt::format("{:.3f}", static_cast<double>(*p.run_time_ns) / 1e6) : "-");
      cells.push_back(known && *p.run_cnt ? std::to_string(*p.run_time_ns / *p.run_cnt) : "-");
    }
    if (!o.instances) cells.push_back(std::to_string(g.ids.size()));
    cells.insert(cells.end(), {id_list(g.ids, kIdsWidth), p.tag, relative_time(p.load_ns, d.header.start_ns),
                               p.unload_ns ? relative_time(*p.unload_ns, d.header.start_ns) : "end"});
    if (o.verbose) {
      // From the stored BPF_PROG_INFO; "-" without it.
      for (const std::optional<uint32_t>& v : {p.jited_len, p.xlated_len, p.verified_insns}) {
        cells.push_back(v ? std::to_string(*v) : "-");
      }
    }
    cells.push_back(p.attach);
    cells.push_back(p.name);
    t.add_row(std::move(cells));
    if (o.verbose) {
      // Its bpf_metadata_* variables (BPF_METADATA records, section 248), one per line.
      // Strings quoted, as `bpftool prog show` prints them.
      for (const bpf::MetadataVar& v : p.metadata) {
        std::vector<std::string> row(width);
        row.back() = fmt::format("  metadata: {} = {}", v.name,
                                 v.kind == bpf::MetadataKind::kText ? quoted(v.value) : v.value);
        t.add_row(std::move(row));
      }
    }
    // A program with one function is its own function: listing it again says nothing.
    if (p.functions.size() < 2) continue;
    for (const analysis::FunctionRow& f : p.functions) {
      std::vector<std::string> row(width);
      row.front() = std::to_string(f.samples);
      row.back() = "  " + f.name;
      t.add_row(std::move(row));
    }
  }
  return out + t.render();
}

void tree_lines(const profile::CallNode& node, uint64_t entry_samples, int depth, Table& t) {
  for (const profile::CallNode& child : node.children) {
    if (percent_of(child.samples, entry_samples) < kCallerPercentLimit) continue;
    t.add_note(fmt::format("  {:>14}  {:{}}{} ({})", percent(child.samples, entry_samples), "",
                           2 * depth, child.symbol, child.dso));
    tree_lines(child, entry_samples, depth + 1, t);
  }
}

std::string entries_text(const analysis::ReportData& d, const RenderOptions& o) {
  const profile::GroupOptions g = group_options(d, o, o.keys);
  std::vector<profile::Row> rows = profile::group(d.profile, g);
  const bool dso = std::find(o.keys.begin(), o.keys.end(), SortKey::kDso) != o.keys.end();
  std::vector<Table::Column> columns{{"Overhead", Table::Align::kRight},
                                     {"Samples", Table::Align::kRight}};
  static constexpr const char* kTitles[] = {"Program", "Symbol",    "Shared Object",
                                            "Command", "Pid:Command", "Line",
                                            "Cgroup",  "Container",   "Owner",
                                            "Attach"};
  static_assert(std::size(kTitles) == static_cast<size_t>(SortKey::kAttach) + 1);
  for (SortKey k : o.keys) {
    // The implied dso goes first so a long symbol does not widen the table.
    if (k == SortKey::kSym && !dso) columns.push_back({"Shared Object"});
    columns.push_back({kTitles[static_cast<int>(k)]});
  }
  Table t(std::move(columns));
  const uint64_t total = d.profile.total().samples;
  for (const profile::Row& r : rows) {
    std::vector<std::string> cells{percent(r.counts.samples, total), std::to_string(r.counts.samples)};
    for (size_t i = 0; i < o.keys.size(); i++) {
      if (o.keys[i] == SortKey::kSym && !dso) cells.push_back(r.sym_dso);
      cells.push_back(r.values[i]);
    }
    t.add_row(std::move(cells));
    if (o.callgraph) {
      profile::CallNode tree = profile::callers_tree(d.profile, r.stacks);
      if (!tree.children.empty()) {
        tree_lines(tree, r.counts.samples, 0, t);
        t.add_note("");
      }
    }
  }
  std::vector<std::string_view> key_names;
  for (SortKey k : o.keys) key_names.push_back(profile::sort_key_name(k));
  std::string title = fmt::format("#\n# Samples by {}{}\n", fmt::join(key_names, ","),
                                  !o.bpf_only        ? ""
                                  : o.cost_total     ? " (samples charged to BPF programs only)"
                                                     : " (BPF leaf frames only)");
  if (rows.empty()) return title + "# (no samples)\n";
  return title + t.render();
}

// The footer: the diagnostics each as its rule lists it (listed()), in name
// order, wrapped at 96 columns; then the unreadable sections by name.
std::string diagnostics_text(const analysis::ReportData& d) {
  std::string out = "#\n# diagnostics:";
  size_t width = out.size() - 2;
  const DiagCounts& counts = d.profile.diagnostics();
  for (Diag diag : kDiagnosticsByName) {
    const DiagInfo& info = diag_info(diag);
    if (!listed(info, counts[diag])) continue;
    std::string item = fmt::format(" {}={}", info.name, counts[diag]);
    if (width + item.size() > 96) {
      out += "\n#  ";
      width = 3;
    }
    out += item;
    width += item.size();
  }
  out += "\n";
  for (const std::string& e : d.header.unreadable_sections) out += "# unreadable: " + e + "\n";
  return out;
}

}  // namespace

std::string relative_time(uint64_t t, uint64_t start_ns) {
  if (t == 0) return "start";
  double s = (static_cast<double>(t) - static_cast<double>(start_ns)) / 1e9;
  return fmt::format("{:+.6f}", s);
}

profile::GroupOptions group_options(const analysis::ReportData& d, const RenderOptions& o,
                                    std::vector<profile::SortKey> keys) {
  profile::GroupOptions g;
  g.keys = std::move(keys);
  g.program_names = analysis::program_names(d);
  g.program_owners = analysis::program_owners(d);
  g.program_attach = analysis::program_attach_points(d);
  g.bpf_only = o.bpf_only;
  g.with_stacks = o.callgraph;
  g.cost_total = o.cost_total;
  g.program_weights = analysis::program_weights(d);
  return g;
}

std::string render_text(const analysis::ReportData& data, const RenderOptions& options) {
  return header_text(data) + programs_text(data, options) + entries_text(data, options) +
         diagnostics_text(data);
}

}  // namespace bpfprof::report
