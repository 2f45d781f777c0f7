// SPDX-License-Identifier: Apache-2.0
#include "compare/diff.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "profile/group.h"
#include "report/table.h"

namespace bpfprof::report {
namespace {

using Key = std::pair<std::string, std::string>;  // (name, detail)
using Counts = std::map<Key, std::pair<uint64_t, uint64_t>>;  // before, after

double pct(uint64_t part, uint64_t whole) {
  if (whole == 0) return 0;
  return 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

// Two decimals, as a JSON number.
double round2(double v) { return std::round(v * 100.0) / 100.0; }

void count_programs(const ReportData& d, bool after, Counts& out) {
  for (const ProgramRow& p : d.programs) {
    auto& c = out[{p.name, p.tag}];
    (after ? c.second : c.first) += p.samples;
  }
}

void count_symbols(const ReportData& d, bool after, Counts& out) {
  profile::GroupOptions g;
  g.keys = {profile::SortKey::kSym};
  for (const profile::Row& r : profile::group(d.profile, g)) {
    auto& c = out[{r.values[0], r.sym_dso}];
    (after ? c.second : c.first) += r.counts.samples;
  }
}

std::vector<DiffEntry> entries(const Counts& counts, uint64_t before_total, uint64_t after_total) {
  std::vector<DiffEntry> out;
  for (const auto& [key, c] : counts) {
    // A program loaded in both but sampled in neither has changed nothing.
    if (c.first == 0 && c.second == 0) continue;
    out.push_back(DiffEntry{key.first, key.second, c.first, c.second, pct(c.first, before_total),
                            pct(c.second, after_total)});
  }
  // The map gave (name, detail) order; a stable sort keeps it among equal deltas.
  std::stable_sort(out.begin(), out.end(), [](const DiffEntry& a, const DiffEntry& b) {
    return std::llabs(a.delta()) > std::llabs(b.delta());
  });
  return out;
}

std::string signed_count(int64_t v) { return fmt::format("{:+d}", v); }
std::string signed_percent(double v) { return fmt::format("{:+.2f}%", v); }
std::string plain_percent(double v) { return fmt::format("{:.2f}%", v); }

std::string table_text(const std::vector<DiffEntry>& rows, const char* detail_title,
                       const char* name_title) {
  Table t({{"Before", Table::Align::kRight},
           {"After", Table::Align::kRight},
           {"Delta", Table::Align::kRight},
           {"Before%", Table::Align::kRight},
           {"After%", Table::Align::kRight},
           {"Delta%", Table::Align::kRight},
           {detail_title},
           {name_title}});
  for (const DiffEntry& e : rows) {
    t.add_row({std::to_string(e.before), std::to_string(e.after), signed_count(e.delta()),
               plain_percent(e.before_percent), plain_percent(e.after_percent),
               signed_percent(e.delta_percent()), e.detail, e.name});
  }
  return t.render();
}

nlohmann::ordered_json entries_json(const std::vector<DiffEntry>& rows, const char* detail_key) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const DiffEntry& e : rows) {
    out.push_back({{"name", e.name},
                   {detail_key, e.detail},
                   {"before", e.before},
                   {"after", e.after},
                   {"delta", e.delta()},
                   {"before_percent", round2(e.before_percent)},
                   {"after_percent", round2(e.after_percent)},
                   {"delta_percent", round2(e.delta_percent())}});
  }
  return out;
}

}  // namespace

Diff diff_reports(const ReportData& before, const ReportData& after) {
  Diff d;
  d.before_total = before.profile.total().samples;
  d.after_total = after.profile.total().samples;
  Counts programs, symbols;
  count_programs(before, false, programs);
  count_programs(after, true, programs);
  count_symbols(before, false, symbols);
  count_symbols(after, true, symbols);
  d.programs = entries(programs, d.before_total, d.after_total);
  d.symbols = entries(symbols, d.before_total, d.after_total);
  return d;
}

std::string render_diff_text(const Diff& d) {
  std::string out = "# bpfprof diff\n";
  out += fmt::format("# before: {}  samples: {}\n", d.before_path, d.before_total);
  out += fmt::format("# after:  {}  samples: {}\n", d.after_path, d.after_total);
  out += "# percents are of each recording's own samples; rows sorted by |delta|\n#\n";
  out += "# BPF programs (leaf frame in the program; same name and tag = same program)\n";
  out += d.programs.empty() ? "# (no BPF program samples in either recording)\n"
                            : table_text(d.programs, "Tag", "Program");
  out += "#\n# Symbols (leaf frame)\n";
  out += d.symbols.empty() ? "# (no samples in either recording)\n"
                           : table_text(d.symbols, "Shared Object", "Symbol");
  return out;
}

std::string render_diff_json(const Diff& d) {
  nlohmann::ordered_json j;
  j["before"] = {{"file", d.before_path}, {"samples", d.before_total}};
  j["after"] = {{"file", d.after_path}, {"samples", d.after_total}};
  j["programs"] = entries_json(d.programs, "tag");
  j["symbols"] = entries_json(d.symbols, "dso");
  // Invalid UTF-8 in recorded names becomes U+FFFD (see render_json).
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace bpfprof::report
