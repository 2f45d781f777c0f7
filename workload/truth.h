// SPDX-License-Identifier: Apache-2.0
// The ground-truth file: what the workload loaded, when, and where the kernel
// put it, for kernel tests to compare recordings against.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "workload/program.h"

namespace bpfprof::workload {

// The truth as JSON text (schema in workload/README.md).
std::string truth_json(const std::vector<ProgramTruth>& programs);

// Writes truth_json(programs) to `path` atomically (temporary file + rename).
Status write_truth(const std::string& path, const std::vector<ProgramTruth>& programs);

}  // namespace bpfprof::workload
