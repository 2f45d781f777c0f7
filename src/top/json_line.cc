// SPDX-License-Identifier: Apache-2.0
// `top --format json`: one JSON object per refresh (schema: docs/top.md, "JSON").
#include <nlohmann/json.hpp>

#include "top/screen.h"

namespace bpfprof::top {

std::string format_json(const Model& model, const SessionInfo& info, size_t symbol_rows,
                        bool instances) {
  using Json = nlohmann::ordered_json;
  const Interval& iv = model.last();
  auto optional = [](const auto& v) { return v ? Json(*v) : Json(nullptr); };
  Json programs = Json::array();
  for (const ProgramRow& p : model.programs(SortKey::kCpu, instances)) {
    // As `report --format json`: `instances` and `ids` per code, or `id`.
    Json row = instances ? Json{{"id", p.id}} : Json{{"instances", p.ids.size()}, {"ids", p.ids}};
    row.update(Json{{"name", p.name},
                    {"tag", p.tag},
                    {"owner", p.owner},
                    {"attach", p.attach},
                    {"attach_points", p.attach_points},
                    {"samples", p.samples},
                    {"cpu_percent", p.cpu_percent},
                    {"total_samples", p.total_samples},
                    {"total_percent", p.total_percent},
                    {"runs", optional(p.runs)},
                    {"runs_per_s", optional(p.runs_per_s)},
                    {"avg_ns", optional(p.avg_ns)},
                    {"gone", p.gone}});
    programs.push_back(std::move(row));
  }
  Json symbols = Json::array();
  for (const SymbolRow& s : model.symbols(false, symbol_rows)) {
    symbols.push_back(Json{{"name", s.name},
                           {"dso", s.dso},
                           {"samples", s.samples},
                           {"cpu_percent", s.cpu_percent}});
  }
  Json j{{"refresh", model.refreshes()},
         {"seconds", iv.seconds},
         {"event", info.event},
         {"frequency", info.frequency},
         {"cpus", info.cpus},
         {"samples", iv.samples},
         {"lost", iv.lost},
         {"run_stats", info.run_stats},
         {"programs", std::move(programs)},
         {"symbols", std::move(symbols)}};
  // Names come from the kernel (comms, BTF): invalid UTF-8 becomes U+FFFD.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace bpfprof::top
