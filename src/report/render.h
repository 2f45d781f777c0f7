// SPDX-License-Identifier: Apache-2.0
// The report renderers: text (header, BPF program table, the table of the
// chosen sort keys with optional callers trees, diagnostics footer) and JSON
// (one object; schema in docs/report.md, "JSON"). Both read ReportData only.
#pragma once

#include <string>
#include <vector>

#include "analysis/report_data.h"
#include "profile/group.h"

namespace bpfprof::report {

struct RenderOptions {
  std::vector<profile::SortKey> keys{profile::SortKey::kSym};
  bool bpf_only = false;   // keep samples whose leaf is BPF code
  bool callgraph = false;  // callers tree below each entry
  bool instances = false;  // program table: every instance on its own row
  bool verbose = false;    // program table: JIT and translated sizes, verified insns
  // A program's cost is its total (self + callees + dispatch, docs/cost.md),
  // or with false its self samples alone (`--cost self`): the program
  // table's order, the owner line, and what keys prog/owner/attach and
  // bpf_only count.
  bool cost_total = true;
};

// How the table of sort keys groups `data` under `options`, for `keys`.
profile::GroupOptions group_options(const analysis::ReportData& data, const RenderOptions& options,
                                    std::vector<profile::SortKey> keys);

// Callers-tree branches below this share of their entry are not printed.
inline constexpr double kCallerPercentLimit = 0.5;

std::string render_text(const analysis::ReportData& data, const RenderOptions& options);
std::string render_json(const analysis::ReportData& data, const RenderOptions& options);

// Time `t` relative to the recording's start, as "+S.ssssss" ("start" for 0:
// loaded before recording began).
std::string relative_time(uint64_t t, uint64_t start_ns);

}  // namespace bpfprof::report
