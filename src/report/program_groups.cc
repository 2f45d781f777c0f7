// SPDX-License-Identifier: Apache-2.0
#include "report/program_groups.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace bpfprof::report {
namespace {

void keep_largest(std::optional<uint32_t>& max, const std::optional<uint32_t>& v) {
  if (v && (!max || *v > *max)) max = v;
}

// Adds instance `p` to the group `g` holds so far.
void merge(ProgramGroup& g, const analysis::ProgramRow& p) {
  analysis::ProgramRow& r = g.row;
  g.ids.push_back(p.id);
  r.samples += p.samples;
  r.callee_samples += p.callee_samples;
  r.dispatch_samples += p.dispatch_samples;
  r.dispatch_estimated = r.dispatch_estimated || p.dispatch_estimated;
  r.load_ns = std::min(r.load_ns, p.load_ns);
  if (!r.unload_ns || !p.unload_ns) {
    r.unload_ns.reset();
  } else {
    r.unload_ns = std::max(*r.unload_ns, *p.unload_ns);
  }
  // Same tag, same code: the same functions, matched by name.
  for (const analysis::FunctionRow& f : p.functions) {
    auto it = std::find_if(r.functions.begin(), r.functions.end(),
                           [&](const analysis::FunctionRow& x) { return x.name == f.name; });
    if (it == r.functions.end()) {
      r.functions.push_back(f);
    } else {
      it->samples += f.samples;
    }
  }
  // Run statistics where both runs and time are known, as the table prints them.
  if (p.run_cnt && p.run_time_ns) {
    if (r.run_cnt && r.run_time_ns) {
      *r.run_cnt += *p.run_cnt;
      *r.run_time_ns += *p.run_time_ns;
    } else {
      r.run_cnt = p.run_cnt;
      r.run_time_ns = p.run_time_ns;
    }
  }
  add_owners(r.owner, p.owner);
  add_owners(r.owner_cgroup, p.owner_cgroup);
  r.attach_points.insert(r.attach_points.end(), p.attach_points.begin(), p.attach_points.end());
  r.attach_details.insert(r.attach_details.end(), p.attach_details.begin(), p.attach_details.end());
  r.owner_pids.insert(r.owner_pids.end(), p.owner_pids.begin(), p.owner_pids.end());
  r.owner_tids.insert(r.owner_tids.end(), p.owner_tids.begin(), p.owner_tids.end());
  keep_largest(r.jited_len, p.jited_len);
  keep_largest(r.xlated_len, p.xlated_len);
  keep_largest(r.verified_insns, p.verified_insns);
  // Same code, but the values are data: the first instance that has them.
  if (r.metadata.empty()) r.metadata = p.metadata;
  if (!r.kernel_name) r.kernel_name = p.kernel_name;
  // Each instance has maps of its own: all of them, each once, by id.
  if (p.maps) {
    if (!r.maps) r.maps.emplace();
    for (const bpf::MapInfo& m : *p.maps) bpf::add_map(*r.maps, m);
  }
}

}  // namespace

void add_owners(std::string& owners, const std::string& more) {
  auto names = [](const std::string& list) {
    std::vector<std::string> out;
    for (size_t at = 0; at <= list.size();) {
      const size_t end = std::min(list.find(',', at), list.size());
      out.push_back(list.substr(at, end - at));
      at = end + 1;
    }
    return out;
  };
  std::vector<std::string> have = names(owners);
  for (std::string& n : names(more)) {
    if (std::find(have.begin(), have.end(), n) != have.end()) continue;
    owners += ',' + n;
    have.push_back(std::move(n));
  }
}

std::string join_attach_points(std::vector<std::string>& points, const std::string& none) {
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  if (points.empty()) return none;
  std::string out = points.front();
  for (size_t i = 1; i < points.size(); i++) out += ", " + points[i];
  return out;
}

std::vector<ProgramGroup> program_groups(const analysis::ReportData& data, bool instances,
                                         bool total) {
  static const std::string kNoTag(16, '0');
  std::vector<ProgramGroup> out;
  std::map<std::pair<std::string, std::string>, size_t> by_code;  // (name, tag) -> out index
  for (const analysis::ProgramRow& p : data.programs) {
    if (!instances && p.tag != kNoTag) {
      auto [it, added] = by_code.try_emplace({p.name, p.tag}, out.size());
      if (!added) {
        merge(out[it->second], p);
        continue;
      }
    }
    out.push_back(ProgramGroup{p, {p.id}});
  }
  for (ProgramGroup& g : out) {
    if (g.ids.size() < 2) continue;  // an instance on its own stays as it is
    for (std::vector<uint32_t>* v : {&g.row.owner_pids, &g.row.owner_tids}) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
    }
    // Every instance's points, each once; none known of any: the first's word.
    g.row.attach = join_attach_points(g.row.attach_points, g.row.attach);
    std::sort(g.row.attach_details.begin(), g.row.attach_details.end());
    g.row.attach_details.erase(std::unique(g.row.attach_details.begin(), g.row.attach_details.end()),
                               g.row.attach_details.end());
  }
  std::stable_sort(out.begin(), out.end(), [total](const ProgramGroup& a, const ProgramGroup& b) {
    return a.row.cost(total) > b.row.cost(total);
  });
  return out;
}

std::string id_list(std::span<const uint32_t> ids, size_t max_chars) {
  std::vector<uint32_t> sorted(ids.begin(), ids.end());
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  // Items: single ids and ranges of consecutive ones, each with its id count.
  std::vector<std::pair<std::string, size_t>> items;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) j++;
    items.emplace_back(j == i ? std::to_string(sorted[i])
                              : fmt::format("{}-{}", sorted[i], sorted[j]),
                       j - i + 1);
    i = j + 1;
  }
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item.first;
  if (!max_chars || out.size() <= max_chars) return out;
  // Too long: whole items while they and the note of what is left fit.
  out.clear();
  size_t left = sorted.size();
  for (size_t k = 0; k < items.size(); k++) {
    const auto& [text, count] = items[k];
    const size_t after = left - count;
    const size_t need = out.size() + (k ? 1 : 0) + text.size() +
                        (after ? fmt::formatted_size(",+{} more", after) : 0);
    if (k > 0 && need > max_chars) break;
    if (k > 0) out += ',';
    out += text;
    left = after;
  }
  // A single item longer than the limit is shown whole.
  return left ? out + fmt::format(",+{} more", left) : out;
}

}  // namespace bpfprof::report
