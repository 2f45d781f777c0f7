// SPDX-License-Identifier: Apache-2.0
// The program table's rows: instances of the same code — same name and tag —
// merged into one row (the default), or every instance on its own
// (`report --instances`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "analysis/report_data.h"

namespace bpfprof::report {

// One row of the program table. `row` holds the merged figures: samples
// (self, also per function; callees, dispatch, estimated if any instance's is) and run statistics summed (run statistics over the
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

// Rows sorted by cost (total, or self with `total` false), most first; ties
// keep the first instance's order. With `instances`, one row per instance
// (ids holds its own id).
std::vector<ProgramGroup> program_groups(const analysis::ReportData& data, bool instances,
                                         bool total = true);

// Merging the owners and attach points of instances, shared with `top`:
// appends the comma-separated owners of `more` that `owners` does not name
// yet; sorts `points` and keeps each once, and joins them with ", " (none:
// `none`, the first instance's word, "[none known]" or "[unknown]").
void add_owners(std::string& owners, const std::string& more);
std::string join_attach_points(std::vector<std::string>& points, const std::string& none);

// Instance ids as a user reads them: sorted, each once, runs of consecutive
// ids as ranges ("12,14-15,20"). Past `max_chars` (0 = no limit) the list
// stops at a whole item and says how many ids it left out
// ("12,14-15,+7 more"); the first item is always shown.
std::string id_list(std::span<const uint32_t> ids, size_t max_chars = 0);

}  // namespace bpfprof::report
