// SPDX-License-Identifier: Apache-2.0
#include "export/flamegraph_json.h"

#include <nlohmann/json.hpp>

namespace bpfprof::exporter {
namespace {

nlohmann::ordered_json to_json(const FlameTree& tree, uint32_t id) {
  const FlameNode& n = tree.node(id);
  nlohmann::ordered_json j;
  j["name"] = std::string(n.name);
  j["kind"] = id == 0 ? "root" : std::string(kind_name(n.kind));
  j["samples"] = n.samples;
  j["self"] = n.self;
  nlohmann::ordered_json children = nlohmann::ordered_json::array();
  for (uint32_t c : n.children) children.push_back(to_json(tree, c));
  j["children"] = std::move(children);
  return j;
}

}  // namespace

std::string render_flame_json(const FlameTree& tree) {
  // Symbols are not guaranteed UTF-8 (ELF names are bytes): replace, don't throw.
  return to_json(tree, 0).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace bpfprof::exporter
