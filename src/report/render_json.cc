// SPDX-License-Identifier: Apache-2.0
// The JSON report: one object, keys in a fixed order (schema: docs/report.md, "JSON").
#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/diagnostics.h"
#include "base/percent.h"
#include "report/program_groups.h"
#include "report/render.h"

namespace bpfprof::report {
namespace {

using Json = nlohmann::ordered_json;
using profile::SortKey;

Json tree_json(const profile::CallNode& node, uint64_t entry_samples) {
  Json children = Json::array();
  for (const profile::CallNode& c : node.children) {
    if (percent_of(c.samples, entry_samples) < kCallerPercentLimit) continue;
    children.push_back(Json{{"name", c.symbol},
                            {"dso", c.dso},
                            {"samples", c.samples},
                            {"callers", tree_json(c, entry_samples)}});
  }
  return children;
}

Json attach_details_json(const std::vector<analysis::ProgramRow::AttachDetail>& details) {
  Json out = Json::array();
  for (const auto& a : details) {
    out.push_back(Json{{"point", a.point}, {"via", a.via}, {"by", a.by.empty() ? Json(nullptr) : Json(a.by)}});
  }
  return out;
}

// A metadata value typed as `bpftool -j prog show` types it: numbers and
// booleans bare, the rest (and a number that does not parse) a string.
Json metadata_value(const bpf::MetadataVar& v) {
  if (v.kind == bpf::MetadataKind::kBool && (v.value == "true" || v.value == "false")) {
    return v.value == "true";
  }
  // Negative numbers as int64, the others as uint64 (a u64 may pass INT64_MAX).
  auto number = [&](auto n) -> std::optional<Json> {
    const char* last = v.value.data() + v.value.size();
    auto [end, ec] = std::from_chars(v.value.data(), last, n);
    if (ec == std::errc() && end == last) return Json(n);
    return std::nullopt;
  };
  if (v.kind == bpf::MetadataKind::kNumber) {
    const std::optional<Json> n =
        v.value.starts_with('-') ? number(int64_t{0}) : number(uint64_t{0});
    if (n) return *n;
  }
  return v.value;
}

// A program's maps as bpftool names them; null when the recording does not say.

Json maps_json(const std::optional<std::vector<bpf::MapInfo>>& maps) {
  if (!maps) return Json(nullptr);
  Json out = Json::array();
  for (const bpf::MapInfo& m : *maps) {
    out.push_back(Json{{"id", m.id},
                       {"type", bpf::map_type_name(m.type)},
                       {"name", m.name},
                       {"key_size", m.key_size},
                       {"value_size", m.value_size},
                       {"max_entries", m.max_entries},
                       {"flags", m.flags}});
  }
  return out;
}

Json programs_json(const analysis::ReportData& d, bool instances, bool cost_total) {
  const uint64_t total = d.profile.total().samples;
  Json out = Json::array();
  for (const ProgramGroup& g : program_groups(d, instances, cost_total)) {
    const analysis::ProgramRow& p = g.row;
    Json functions = Json::array();
    for (const analysis::FunctionRow& f : p.functions) {
      functions.push_back(Json{{"name", f.name}, {"samples", f.samples}});
    }
    Json row;
    if (instances) {
      row["id"] = p.id;
    } else {
      row["instances"] = g.ids.size();
      row["ids"] = g.ids;
    }
    row.update(Json{{"name", p.name},
                    {"kernel_name", p.kernel_name ? Json(*p.kernel_name) : Json(nullptr)},
                    {"tag", p.tag},
                    {"samples", p.samples},
                    {"percent", percent_of_rounded(p.samples, total)},
                    {"self_samples", p.samples},
                    {"callee_samples", p.callee_samples},
                    {"dispatch_samples", p.dispatch_samples},
                    {"total_samples", p.total_samples()},
                    {"total_percent", percent_of_rounded(p.total_samples(), total)},
                    {"dispatch_estimated", p.dispatch_estimated},
                    {"load_ns", p.load_ns},
                    {"unload_ns", p.unload_ns ? Json(*p.unload_ns) : Json(nullptr)},
                    {"owner", p.owner},
                    {"owner_pids", p.owner_pids},
                    {"owner_tids", p.owner_tids},
                    {"owner_cgroup", p.owner_cgroup},
                    {"attach", p.attach},
                    {"attach_points", p.attach_points},
                    {"attach_details", attach_details_json(p.attach_details)},
                    {"jited_len", p.jited_len ? Json(*p.jited_len) : Json(nullptr)},
                    {"xlated_len", p.xlated_len ? Json(*p.xlated_len) : Json(nullptr)},
                    {"verified_insns", p.verified_insns ? Json(*p.verified_insns) : Json(nullptr)}});
    Json metadata = Json::object();
    for (const bpf::MetadataVar& v : p.metadata) metadata[v.name] = metadata_value(v);
    row["metadata"] = std::move(metadata);
    row["maps"] = maps_json(p.maps);
    if (d.enrichment && d.enrichment->bpf_stats) {
      const bool known = p.run_cnt && p.run_time_ns;
      row["run_cnt"] = known ? Json(*p.run_cnt) : Json(nullptr);
      row["run_time_ns"] = known ? Json(*p.run_time_ns) : Json(nullptr);
      row["avg_ns"] = known && *p.run_cnt ? Json(*p.run_time_ns / *p.run_cnt) : Json(nullptr);
    }
    row["functions"] = std::move(functions);
    out.push_back(std::move(row));
  }
  return out;
}

// Rows of `keys`; each row names its key values by key name.
Json rows_json(const analysis::ReportData& d, const RenderOptions& o, std::vector<SortKey> keys,
               bool symbols_shape) {
  const profile::GroupOptions g = group_options(d, o, keys);
  const uint64_t total = d.profile.total().samples;
  const bool has_dso = std::find(keys.begin(), keys.end(), SortKey::kDso) != keys.end();
  Json out = Json::array();
  for (const profile::Row& r : profile::group(d.profile, g)) {
    Json row;
    if (symbols_shape) {
      row["name"] = r.values[0];
      row["dso"] = r.sym_dso;
    } else {
      for (size_t i = 0; i < keys.size(); i++) {
        row[std::string(profile::sort_key_name(keys[i]))] = r.values[i];
        if (keys[i] == SortKey::kSym && !has_dso) row["dso"] = r.sym_dso;
      }
    }
    row["samples"] = r.counts.samples;
    row["period"] = r.counts.period;
    row["percent"] = percent_of_rounded(r.counts.samples, total);
    if (o.callgraph) {
      row["callers"] = tree_json(profile::callers_tree(d.profile, r.stacks), r.counts.samples);
    }
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace

std::string render_json(const analysis::ReportData& d, const RenderOptions& o) {
  const analysis::Header& h = d.header;
  Json j;
  j["host"] = h.host;
  j["kernel"] = h.kernel;
  j["arch"] = h.arch;
  if (!h.recorded_by.empty()) j["recorded_by"] = h.recorded_by;
  if (!h.kernel_symbols.empty()) j["kernel_symbols"] = h.kernel_symbols;
  j["events"] = h.events;
  j["start_ns"] = h.start_ns;
  j["end_ns"] = h.end_ns;
  j["duration_ns"] = h.duration_ns();
  j["samples"] = d.profile.total().samples;
  j["period"] = d.profile.total().period;
  j["lost"] = h.lost;
  j["throttled"] = h.throttled;
  j["bpf_only"] = o.bpf_only;
  j["cost"] = o.cost_total ? "total" : "self";
  j["callchains"] = d.callchains;
  if (d.enrichment) {
    const analysis::EnrichmentSummary& e = *d.enrichment;
    j["enrichment"] = Json{{"path", e.path},
                           {"in_kernel", e.in_kernel},
                           {"in_kernel_errno", e.in_kernel_errno},
                           {"programs", e.programs},
                           {"stored", e.stored},
                           {"gone", e.gone},
                           {"captured", e.captured},
                           {"enriched_by_id", e.enriched_by_id},
                           {"capture_lost", e.capture_lost},
                           {"lost", e.lost},
                           {"median_hold_ns", e.median_hold_ns},
                           {"max_hold_ns", e.max_hold_ns},
                           {"bpf_stats", e.bpf_stats}};
  }
  Json owners = Json::array();
  for (const analysis::OwnerCost& c : analysis::cost_by_owner(d, o.cost_total)) {
    owners.push_back(Json{{"owner", c.owner},
                          {"cgroup", c.cgroups},
                          {"samples", c.samples},
                          {"percent", percent_of_rounded(c.samples, d.profile.total().samples)},
                          {"programs", c.programs},
                          {"estimated", c.estimated}});
  }
  j["owners"] = std::move(owners);
  j["programs"] = programs_json(d, o.instances, o.cost_total);
  const bool default_keys = o.keys == std::vector<SortKey>{SortKey::kSym};
  j["symbols"] = rows_json(d, default_keys ? o : RenderOptions{{SortKey::kSym}, o.bpf_only, false, false, false, o.cost_total},
                           {SortKey::kSym}, true);
  if (!default_keys) {
    std::vector<std::string> names;
    for (SortKey k : o.keys) names.emplace_back(profile::sort_key_name(k));
    j["sort"] = names;
    j["entries"] = rows_json(d, o, o.keys, false);
  }
  Json diag = Json::object();
  const DiagCounts& counts = d.profile.diagnostics();
  for (Diag id : kDiagnosticsByName) {
    const DiagInfo& info = diag_info(id);
    if (listed(info, counts[id])) diag[std::string(info.name)] = counts[id];
  }
  j["diagnostics"] = std::move(diag);
  // Names come from the recording (comms cut at 15 bytes by the kernel may end
  // inside a UTF-8 character): invalid bytes become U+FFFD instead of aborting.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace bpfprof::report
