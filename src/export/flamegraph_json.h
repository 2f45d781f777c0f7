// SPDX-License-Identifier: Apache-2.0
// The flame tree as JSON: {"name", "kind", "samples", "self", "children": [...]}
// from the root ("all", kind "root") down, children in the folded order.
#pragma once

#include <string>

#include "export/flame_tree.h"

namespace bpfprof::exporter {

std::string render_flame_json(const FlameTree& tree);

}  // namespace bpfprof::exporter
