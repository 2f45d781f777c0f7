// SPDX-License-Identifier: Apache-2.0
#include "top/model.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "base/percent.h"
#include "report/program_groups.h"

namespace bpfprof::top {

SortKey next_sort_key(SortKey key) {
  switch (key) {
    case SortKey::kCpu: return SortKey::kRuns;
    case SortKey::kRuns: return SortKey::kAvgNs;
    case SortKey::kAvgNs: return SortKey::kCpu;
  }
  return SortKey::kCpu;
}

const char* sort_key_name(SortKey key) {
  switch (key) {
    case SortKey::kCpu: return "CPU%";
    case SortKey::kRuns: return "runs/s";
    case SortKey::kAvgNs: return "avg ns";
  }
  return "?";
}

void Model::set_baseline(const std::vector<RunReading>& readings) {
  for (const RunReading& r : readings) baseline_[r.id] = r;
}

void Model::update(const Interval& interval) {
  std::unordered_map<uint32_t, const RunReading*> readings;
  if (interval.runs) {
    for (const RunReading& r : *interval.runs) readings[r.id] = &r;
  }
  for (auto& [id, p] : programs_) p.seen = false;

  for (const ProgramSample& s : interval.programs) {
    Program& p = programs_[s.id];
    ProgramRow& row = p.row;
    const bool was_gone = row.gone;
    row.id = s.id;
    row.ids = {s.id};
    row.name = s.name;
    row.tag = s.tag;
    row.owner = s.owner;
    row.attach_points = s.attach_points;
    row.attach = s.attach;
    row.samples = s.samples;
    row.cpu_percent = percent_of(s.samples, interval.samples);
    row.total_samples = s.total_samples;
    row.total_percent = percent_of(s.total_samples, interval.samples);
    row.runs.reset();
    row.runs_per_s.reset();
    row.avg_ns.reset();
    row.run_time_ns.reset();
    p.seen = true;
    if (s.unloaded) {
      row.gone_refreshes = was_gone ? row.gone_refreshes + 1 : 0;
      row.gone = true;
      continue;
    }
    auto it = readings.find(s.id);
    if (it == readings.end()) continue;
    const RunReading& now = *it->second;
    RunReading before{s.id, 0, 0};
    if (p.reading) {
      before = *p.reading;
    } else if (auto b = baseline_.find(s.id); b != baseline_.end()) {
      before = b->second;
      baseline_.erase(b);
    }
    p.reading = now;
    // A smaller count than before means a different program reused the id
    // (ids are not reused in practice) or a counter wrapped: no delta then.
    if (now.run_cnt < before.run_cnt || now.run_time_ns < before.run_time_ns) continue;
    const uint64_t runs = now.run_cnt - before.run_cnt;
    row.runs = runs;
    row.run_time_ns = now.run_time_ns - before.run_time_ns;
    if (interval.seconds > 0) row.runs_per_s = static_cast<double>(runs) / interval.seconds;
    if (runs > 0) {
      row.avg_ns = static_cast<double>(now.run_time_ns - before.run_time_ns) /
                   static_cast<double>(runs);
    }
  }

  for (auto it = programs_.begin(); it != programs_.end();) {
    Program& p = it->second;
    if (!p.seen) {
      ProgramRow& row = p.row;
      row.gone_refreshes = row.gone ? row.gone_refreshes + 1 : 0;
      row.gone = true;
      row.samples = 0;
      row.cpu_percent = 0;
      row.total_samples = 0;
      row.total_percent = 0;
      row.runs.reset();
      row.runs_per_s.reset();
      row.avg_ns.reset();
      row.run_time_ns.reset();
    }
    if (p.row.gone && p.row.gone_refreshes >= keep_gone_) {
      it = programs_.erase(it);
    } else {
      ++it;
    }
  }
  last_ = interval;
  refreshes_++;
}

namespace {

// Adds instance `p` to the group row `g`.
void merge(ProgramRow& g, const ProgramRow& p) {
  g.ids.push_back(p.id);
  g.id = std::min(g.id, p.id);
  g.samples += p.samples;
  g.cpu_percent += p.cpu_percent;
  g.total_samples += p.total_samples;
  g.total_percent += p.total_percent;
  if (p.runs) {
    g.runs = g.runs.value_or(0) + *p.runs;
    g.run_time_ns = g.run_time_ns.value_or(0) + p.run_time_ns.value_or(0);
  }
  if (p.runs_per_s) g.runs_per_s = g.runs_per_s.value_or(0) + *p.runs_per_s;
  if (g.runs && *g.runs > 0) {
    g.avg_ns = static_cast<double>(*g.run_time_ns) / static_cast<double>(*g.runs);
  }
  report::add_owners(g.owner, p.owner);
  g.attach_points.insert(g.attach_points.end(), p.attach_points.begin(), p.attach_points.end());
  g.attach = report::join_attach_points(g.attach_points, g.attach);
  // Shown gone once every instance is; counted from the latest to go.
  g.gone_refreshes = g.gone && p.gone ? std::min(g.gone_refreshes, p.gone_refreshes) : 0;
  g.gone = g.gone && p.gone;
}

}  // namespace

std::vector<ProgramRow> Model::programs(SortKey key, bool instances) const {
  static const std::string kNoTag(16, '0');
  std::vector<ProgramRow> rows;
  rows.reserve(programs_.size());
  std::map<std::pair<std::string_view, std::string_view>, size_t> by_code;  // -> rows index
  for (const auto& [id, p] : programs_) {
    if (!instances && p.row.tag != kNoTag) {
      auto [it, added] = by_code.try_emplace({p.row.name, p.row.tag}, rows.size());
      if (!added) {
        merge(rows[it->second], p.row);
        continue;
      }
    }
    rows.push_back(p.row);
  }
  // Rows without a value sort after every row with one (-1 is below any value).
  auto value = [key](const ProgramRow& r) -> double {
    switch (key) {
      case SortKey::kCpu: return static_cast<double>(r.total_samples);
      case SortKey::kRuns: return r.runs_per_s.value_or(-1);
      case SortKey::kAvgNs: return r.avg_ns.value_or(-1);
    }
    return 0;
  };
  std::sort(rows.begin(), rows.end(), [&](const ProgramRow& a, const ProgramRow& b) {
    return std::tuple(-value(a), -static_cast<double>(a.samples), a.id) <
           std::tuple(-value(b), -static_cast<double>(b.samples), b.id);
  });
  return rows;
}

std::vector<SymbolRow> Model::symbols(bool bpf_only, size_t limit) const {
  std::vector<SymbolRow> rows;
  for (const SymbolSample& s : last_.symbols) {
    const bool bpf = s.kind == symbols::FrameKind::kBpf || s.kind == symbols::FrameKind::kBpfImage;
    if (bpf_only && !bpf) continue;
    rows.push_back(SymbolRow{s.name, s.dso, s.kind, s.samples,
                             percent_of(s.samples, last_.samples)});
  }
  std::sort(rows.begin(), rows.end(), [](const SymbolRow& a, const SymbolRow& b) {
    return std::tie(b.samples, a.name, a.dso) < std::tie(a.samples, b.name, b.dso);
  });
  if (rows.size() > limit) rows.resize(limit);
  return rows;
}

}  // namespace bpfprof::top
