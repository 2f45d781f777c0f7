// SPDX-License-Identifier: Apache-2.0
#include "compare/diff.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/percent.h"
#include "profile/group.h"
#include "report/table.h"

namespace bpfprof::compare {
namespace {

using Key = std::pair<std::string, std::string>;  // (name, detail)
using Counts = std::map<Key, std::pair<uint64_t, uint64_t>>;  // before, after

// Two decimals, as a JSON number.
double round2(double v) { return std::round(v * 100.0) / 100.0; }

void count_programs(const analysis::ReportData& d, bool after, bool total, Counts& out) {
  for (const analysis::ProgramRow& p : d.programs) {
    auto& c = out[{p.name, p.tag}];
    (after ? c.second : c.first) += p.cost(total);
  }
}

void count_symbols(const analysis::ReportData& d, bool after, Counts& out) {
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
    out.push_back(DiffEntry{key.first, key.second, c.first, c.second,
                            percent_of(c.first, before_total), percent_of(c.second, after_total)});
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
  report::Table t({{"Before", report::Table::Align::kRight},
           {"After", report::Table::Align::kRight},
           {"Delta", report::Table::Align::kRight},
           {"Before%", report::Table::Align::kRight},
           {"After%", report::Table::Align::kRight},
           {"Delta%", report::Table::Align::kRight},
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

// One side of a gate group: samples, and runs where measured.
struct Side {
  bool present = false;
  uint64_t samples = 0, runs = 0, run_ns = 0;
  bool measured = false;
  bool total = true;  // GateOptions::cost_total
  void add(const analysis::ProgramRow& p) {
    present = true;
    samples += p.cost(total);
    if (p.run_cnt && p.run_time_ns) {
      measured = true;
      runs += *p.run_cnt;
      run_ns += *p.run_time_ns;
    }
  }
};

std::vector<Offender> find_offenders(const analysis::ReportData& before,
                                     const analysis::ReportData& after,
                                     const GateOptions& options) {
  // (name, tag) -> before, after; then what only one side has regroups by name.
  std::map<Key, std::pair<Side, Side>> groups;
  const Side empty{.total = options.cost_total};
  auto group = [&](std::map<Key, std::pair<Side, Side>>& m, const Key& key) -> std::pair<Side, Side>& {
    return m.try_emplace(key, empty, empty).first->second;
  };
  for (const analysis::ProgramRow& p : before.programs) group(groups, {p.name, p.tag}).first.add(p);
  for (const analysis::ProgramRow& p : after.programs) group(groups, {p.name, p.tag}).second.add(p);
  std::map<Key, std::pair<Side, Side>> gated;
  for (const auto& [key, sides] : groups) {
    if (sides.first.present && sides.second.present) {
      gated[key] = sides;
      continue;
    }
    auto& by_name = group(gated, {key.first, ""});
    for (const analysis::ProgramRow& p : before.programs) {
      if (p.name == key.first && p.tag == key.second) by_name.first.add(p);
    }
    for (const analysis::ProgramRow& p : after.programs) {
      if (p.name == key.first && p.tag == key.second) by_name.second.add(p);
    }
  }
  const uint64_t before_total = before.profile.total().samples;
  const uint64_t after_total = after.profile.total().samples;
  std::vector<Offender> out;
  for (const auto& [key, sides] : gated) {
    const auto& [b, a] = sides;
    if (options.fail_above) {
      Offender o{key.first, key.second, true, percent_of(b.samples, before_total),
                 percent_of(a.samples, after_total)};
      if (o.growth() > *options.fail_above) out.push_back(o);
    }
    if (options.fail_above_ns && b.measured && a.measured && b.runs && a.runs) {
      Offender o{key.first, key.second, false,
                 static_cast<double>(b.run_ns) / static_cast<double>(b.runs),
                 static_cast<double>(a.run_ns) / static_cast<double>(a.runs)};
      if (o.growth() > *options.fail_above_ns) out.push_back(o);
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Offender& x, const Offender& y) { return x.growth() > y.growth(); });
  return out;
}

std::string offender_text(const Offender& o) {
  const std::string what = o.tag.empty() ? o.name + " (by name)" : o.name + " (tag " + o.tag + ")";
  if (o.by_share) {
    return fmt::format("{}: share {:.2f}% -> {:.2f}% (+{:.2f} points)", what, o.before, o.after,
                       o.growth());
  }
  return fmt::format("{}: {:.0f} -> {:.0f} ns per run (+{:.0f} ns)", what, o.before, o.after,
                     o.growth());
}

}  // namespace

std::string render_offender(const Offender& o) { return offender_text(o); }

Diff diff_reports(const analysis::ReportData& before, const analysis::ReportData& after,
                  const GateOptions& gate) {
  Diff d;
  d.before_total = before.profile.total().samples;
  d.after_total = after.profile.total().samples;
  Counts programs, symbols;
  count_programs(before, false, gate.cost_total, programs);
  count_programs(after, true, gate.cost_total, programs);
  count_symbols(before, false, symbols);
  count_symbols(after, true, symbols);
  d.programs = entries(programs, d.before_total, d.after_total);
  d.symbols = entries(symbols, d.before_total, d.after_total);
  d.gate = gate;
  if (gate.active()) d.offenders = find_offenders(before, after, gate);
  return d;
}

std::string render_diff_text(const Diff& d) {
  std::string out = "# bpfprof diff\n";
  out += fmt::format("# before: {}  samples: {}\n", d.before_path, d.before_total);
  out += fmt::format("# after:  {}  samples: {}\n", d.after_path, d.after_total);
  out += "# percents are of each recording's own samples; rows sorted by |delta|\n#\n";
  out += d.gate.cost_total
             ? "# BPF programs (total: self + callees + dispatch; same name and tag = same "
               "program)\n"
             : "# BPF programs (leaf frame in the program; same name and tag = same program)\n";
  out += d.programs.empty() ? "# (no BPF program samples in either recording)\n"
                            : table_text(d.programs, "Tag", "Program");
  out += "#\n# Symbols (leaf frame)\n";
  out += d.symbols.empty() ? "# (no samples in either recording)\n"
                           : table_text(d.symbols, "Shared Object", "Symbol");
  if (d.gate.active()) {
    out += "#\n# Gate:";
    if (d.gate.fail_above) out += fmt::format(" --fail-above {} (points of share)", *d.gate.fail_above);
    if (d.gate.fail_above_ns) out += fmt::format(" --fail-above-ns {} (ns per run)", *d.gate.fail_above_ns);
    out += fmt::format("; {} offender{}\n", d.offenders.size(), d.offenders.size() == 1 ? "" : "s");
    for (const Offender& o : d.offenders) out += "#   " + offender_text(o) + "\n";
  }
  return out;
}

std::string render_diff_json(const Diff& d) {
  nlohmann::ordered_json j;
  j["before"] = {{"file", d.before_path}, {"samples", d.before_total}};
  j["after"] = {{"file", d.after_path}, {"samples", d.after_total}};
  j["programs"] = entries_json(d.programs, "tag");
  j["symbols"] = entries_json(d.symbols, "dso");
  if (d.gate.active()) {
    nlohmann::ordered_json offenders = nlohmann::ordered_json::array();
    for (const Offender& o : d.offenders) {
      offenders.push_back({{"name", o.name},
                           {"tag", o.tag.empty() ? nlohmann::ordered_json(nullptr)
                                                 : nlohmann::ordered_json(o.tag)},
                           {"measure", o.by_share ? "percent" : "ns_per_run"},
                           {"before", round2(o.before)},
                           {"after", round2(o.after)},
                           {"growth", round2(o.growth())}});
    }
    j["gate"] = {{"fail_above", d.gate.fail_above ? nlohmann::ordered_json(*d.gate.fail_above)
                                                  : nlohmann::ordered_json(nullptr)},
                 {"fail_above_ns", d.gate.fail_above_ns
                                       ? nlohmann::ordered_json(*d.gate.fail_above_ns)
                                       : nlohmann::ordered_json(nullptr)},
                 {"offenders", std::move(offenders)}};
  }
  // Invalid UTF-8 in recorded names becomes U+FFFD (see render_json).
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace bpfprof::compare
