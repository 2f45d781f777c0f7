// SPDX-License-Identifier: Apache-2.0
#include "analysis/program_table.h"

#include <algorithm>
#include <map>
#include <string>

#include <fmt/format.h>

#include "analysis/aggregate.h"
#include "analysis/cost.h"
#include "bpf/prog_info.h"

namespace bpfprof::analysis {
namespace {

void set_owner(const symbols::Symbolizer& sym, const perfdata::Features& features,
               const symbols::BpfProgram& prog, ProgramRow& row) {
  row.owner = program_owner(sym, features, prog, &row.owner_pids);
  if (prog.loader_pid != 0 && prog.loader_tid != 0) row.owner_tids = {prog.loader_tid};
  row.owner_cgroup = program_owner_cgroup(sym, features, prog);
}

// Appends `item` to the comma-separated `list` unless it is in it already.
void add_distinct(std::string& list, std::string_view item) {
  for (size_t at = 0; at <= list.size();) {
    const size_t comma = std::min(list.find(',', at), list.size());
    if (std::string_view(list).substr(at, comma - at) == item) return;
    at = comma + 1;
  }
  if (!list.empty()) list += ',';
  list += item;
}

// The path of cgroup `id` as the recording names it; empty if it does not.
std::string_view cgroup_name(const symbols::Symbolizer& sym, uint64_t id) {
  return id == 0 ? std::string_view() : sym.cgroup_path(id);
}

}  // namespace

std::string program_owner(const symbols::Symbolizer& sym, const perfdata::Features& features,
                          const symbols::BpfProgram& prog, std::vector<uint32_t>* pids) {
  if (prog.loader_pid != 0) {
    std::string_view comm = sym.comm(prog.loader_pid, prog.loader_tid, prog.load_time);
    if (pids) *pids = {prog.loader_pid};
    return fmt::format("{}[{}]", comm.empty() ? "[unknown]" : comm, prog.loader_pid);
  }
  if (prog.load_time != 0 || !features.owners) return "[unknown]";
  std::string owner;
  bool pinned = false;
  for (const perfdata::ProgramHolder& h : features.owners->holders) {
    if (h.prog_id != prog.id) continue;
    if (h.pid == 0) {
      pinned = pinned || h.has(perfdata::ProgramHolder::kPinned);
      continue;
    }
    if (!owner.empty()) owner += ',';
    owner += fmt::format("{}[{}]", h.comm.empty() ? "[unknown]" : h.comm, h.pid);
    if (pids) pids->push_back(h.pid);
  }
  if (!owner.empty()) return owner;
  return pinned ? "[pinned]" : "[unknown]";
}

std::string program_owner_cgroup(const symbols::Symbolizer& sym,
                                 const perfdata::Features& features,
                                 const symbols::BpfProgram& prog) {
  constexpr std::string_view kUnknown = "[unknown]";
  if (!features.owners) return std::string(kUnknown);
  if (prog.loader_pid != 0) {
    for (const perfdata::ProgramLoader& l : features.owners->loaders) {
      if (l.prog_id != prog.id) continue;
      std::string_view path = cgroup_name(sym, l.cgroup_id);
      return std::string(path.empty() ? kUnknown : path);
    }
    return std::string(kUnknown);
  }
  if (prog.load_time != 0) return std::string(kUnknown);
  std::string paths;
  for (const perfdata::ProgramHolder& h : features.owners->holders) {
    if (h.prog_id != prog.id || h.pid == 0) continue;
    std::string_view path = cgroup_name(sym, h.cgroup_id);
    if (path.empty()) path = kUnknown;
    add_distinct(paths, path);
  }
  return paths.empty() ? std::string(kUnknown) : paths;
}

AttachIndex attach_index(const perfdata::Features& features) {
  AttachIndex index;
  if (!features.attach) return index;
  for (const perfdata::AttachEntry& e : features.attach->entries) {
    std::vector<std::string>& points = index[e.prog_id];
    auto at = std::lower_bound(points.begin(), points.end(), e.point);
    if (at == points.end() || *at != e.point) points.insert(at, e.point);
  }
  return index;
}

std::string program_attach(const perfdata::Features& features, const AttachIndex& index,
                           uint32_t id) {
  if (!features.attach) return "[unknown]";
  auto it = index.find(id);
  if (it == index.end() || it->second.empty()) return std::string(kAttachNoneKnown);
  return fmt::format("{}", fmt::join(it->second, ", "));
}

namespace {

// The path that named entry `e` (ProgramRow::AttachDetail::via).
std::string attach_via(const perfdata::AttachEntry& e) {
  using perfdata::AttachEntry;
  if (e.pid != 0 && e.link_id == 0) return "task_fd_query";
  if (e.source == AttachEntry::kCaptured) return "capture";
  if (e.source == AttachEntry::kById) return "link_by_id";
  return e.link_id != 0 ? "link" : "listing";
}

std::unordered_map<uint32_t, std::vector<ProgramRow::AttachDetail>> attach_details(
    const perfdata::Features& features) {
  std::unordered_map<uint32_t, std::vector<ProgramRow::AttachDetail>> out;
  if (!features.attach) return out;
  for (const perfdata::AttachEntry& e : features.attach->entries) {
    out[e.prog_id].push_back(
        {e.point, attach_via(e), e.pid ? fmt::format("{}[{}]", e.comm, e.pid) : std::string()});
  }
  for (auto& [id, v] : out) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  return out;
}

}  // namespace

std::vector<ProgramRow> program_table(const symbols::Symbolizer& sym,
                                      const perfdata::Features& features,
                                      const profile::Profile& p) {
  std::vector<ProgramRow> rows;
  const AttachIndex attach = attach_index(features);
  const auto details = attach_details(features);
  for (const symbols::BpfProgram& prog : sym.bpf_programs()) {
    ProgramRow row;
    set_owner(sym, features, prog, row);
    if (auto it = attach.find(prog.id); it != attach.end()) row.attach_points = it->second;
    row.attach = program_attach(features, attach, prog.id);
    if (auto it = details.find(prog.id); it != details.end()) row.attach_details = it->second;
    if (prog.info != nullptr) {
      row.jited_len = prog.info->info.jited_prog_len;
      row.xlated_len = prog.info->info.xlated_prog_len;
      row.verified_insns = prog.info->info.verified_insns;
      row.kernel_name = prog.info->name();
      row.maps = prog.info->maps;
    }
    row.metadata = prog.metadata;
    row.id = prog.id;
    row.name = prog.name;
    row.tag = bpf::tag_hex(prog.tag);
    row.load_ns = prog.load_time;
    row.unload_ns = prog.unload_time;
    for (const symbols::BpfFunction& fn : prog.functions) row.functions.push_back({fn.ksym, 0});
    rows.push_back(std::move(row));
  }
  CostTally tally(rows.size());
  for (const auto& [key, counts] : p.samples()) {
    const profile::Frame* leaf = p.leaf(key.stack);
    if (leaf != nullptr && leaf->kind == profile::FrameKind::kBpf && leaf->bpf_program != 0 &&
        leaf->bpf_program <= rows.size()) {
      ProgramRow& row = rows[leaf->bpf_program - 1];
      row.samples += counts.samples;
      if (leaf->bpf_function < row.functions.size()) {
        row.functions[leaf->bpf_function].samples += counts.samples;
      }
    }
    if (key.charge != 0) tally.add(p.charge(key.charge), counts.samples);
  }
  for (size_t i = 0; i < rows.size(); i++) tally.self[i] = rows[i].samples;
  tally.finish();
  for (size_t i = 0; i < rows.size(); i++) {
    rows[i].callee_samples = tally.callees[i];
    rows[i].dispatch_samples = tally.dispatch[i];
    rows[i].dispatch_estimated = tally.estimated[i];
  }
  return rows;
}


std::vector<std::string> program_names(const ReportData& data) {
  std::vector<std::string> names;
  for (const ProgramRow& p : data.programs) names.push_back(p.name);
  return names;
}

std::vector<std::string> program_owners(const ReportData& data) {
  std::vector<std::string> owners;
  for (const ProgramRow& p : data.programs) owners.push_back(p.owner);
  return owners;
}

std::vector<std::string> program_attach_points(const ReportData& data) {
  std::vector<std::string> points;
  for (const ProgramRow& p : data.programs) points.push_back(p.attach);
  return points;
}

std::vector<uint64_t> program_weights(const ReportData& data) {
  std::vector<uint64_t> weights;
  for (const ProgramRow& p : data.programs) weights.push_back(p.samples + p.callee_samples);
  return weights;
}

std::vector<OwnerCost> cost_by_owner(const ReportData& data, bool total) {
  std::map<std::string, OwnerCost> by;
  for (const ProgramRow& p : data.programs) {
    if (p.cost(total) == 0) continue;
    OwnerCost& c = by[p.owner];
    c.owner = p.owner;
    add_distinct(c.cgroups, p.owner_cgroup);
    c.samples += p.cost(total);
    c.estimated = c.estimated || (total && p.dispatch_estimated);
    c.programs++;
  }
  std::vector<OwnerCost> out;
  for (auto& [name, c] : by) out.push_back(std::move(c));
  std::stable_sort(out.begin(), out.end(),
                   [](const OwnerCost& a, const OwnerCost& b) { return a.samples > b.samples; });
  return out;
}


}  // namespace bpfprof::analysis
