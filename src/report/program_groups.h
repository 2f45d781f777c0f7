// SPDX-License-Identifier: Apache-2.0
// The program table's rows: instances of the same code — same name and tag —
// merged into one row (the default), or every instance on its own
// (`report --instances`).
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/report_data.h"

namespace bpfprof::report {

// One row of the program table. `row` holds the merged figures: samples
// (also per function) and run statistics summed (run statistics over the
// instances that have them; none if none has), `load_ns` the first load,
// `unload_ns` the last unload (none while any instance is still loaded),
// `owner` every distinct owner in load order (comma-separated), `owner_pids`
// their pids sorted, `attach_points` every instance's (sorted, once each) and
// `attach` them joined, sizes and verified_insns the largest stored, `id` the
// first instance's. Every program of the table has the tag of its BPF_EVENT;
// one whose tag is all zeros (no kernel writes that) stays a row of its own,
// since a name alone (cut at 15 bytes) does not tell one code from another.
struct ProgramGroup {
  analysis::ProgramRow row;
  std::vector<uint32_t> ids;  // every instance's id, in load order
};

// Rows sorted by samples, most first; ties keep the first instance's order.
// With `instances`, one row per instance (ids holds its own id).
std::vector<ProgramGroup> program_groups(const analysis::ReportData& data, bool instances);

}  // namespace bpfprof::report
