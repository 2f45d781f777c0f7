// SPDX-License-Identifier: Apache-2.0
// Folded stacks, the input format of the common flame graph scripts: one line
// per distinct stack, "root;caller;...;leaf <samples>", frames spelled by
// folded_frame(), lines in byte order of the stack. Empty for no samples.
#pragma once

#include <string>

#include "export/flame_tree.h"

namespace bpfprof::exporter {

std::string render_folded(const FlameTree& tree);

}  // namespace bpfprof::exporter
