// SPDX-License-Identifier: Apache-2.0
// Pass 2: samples in parallel contiguous chunks, each worker symbolizing and
// aggregating into its own Profile; the profiles are merged at the end and the
// BPF program table is counted from leaf frames.
#pragma once

#include <string_view>
#include <unordered_map>

#include "analysis/report_data.h"
#include "analysis/sample_filter.h"
#include "analysis/session.h"
#include "base/error.h"

namespace bpfprof::analysis {

struct AggregateOptions {
  bool stacks = false;  // keep whole callchains (report -g); else leaf frames only
  bool lines = false;   // look up BPF source lines (sort key `line`)
  bool cgroups = false; // name each sample's cgroup (sort keys `cgroup`, `container`)
  unsigned threads = 0; // 0 = one per online CPU
  SampleFilter filter;  // samples left out are not counted anywhere (export --pid/--time)
};

ReportData aggregate(const Session& session, const AggregateOptions& options);

// Who owns `prog` (ProgramRow::owner): comm[pid] of the loader its BPF_EVENT
// names (comm at load time), else of every holder section 253 lists for a
// program loaded before recording, else [pinned], else [unknown]. `pids`
// gets the pids named.
std::string program_owner(const symbols::Symbolizer& sym, const perfdata::Features& features,
                          const symbols::BpfProgram& prog, std::vector<uint32_t>* pids = nullptr);

// The cgroup of `prog`'s owner (ProgramRow::owner_cgroup): the path a CGROUP
// record of the recording gives the cgroup section 253 names for its loader
// (read by the in-kernel capture at the load) or for its holders at start
// (distinct paths comma-separated); "[unknown]" where the file does not say.
std::string program_owner_cgroup(const symbols::Symbolizer& sym,
                                 const perfdata::Features& features,
                                 const symbols::BpfProgram& prog);

// Where each program was attached (section 254): program id -> its points,
// sorted, each once. Built once per report (or per script worker).
using AttachIndex = std::unordered_map<uint32_t, std::vector<std::string>>;
AttachIndex attach_index(const perfdata::Features& features);
// ProgramRow::attach of program `id`: its points joined by ", ";
// "[none known]" when the file has section 254 and it names none for `id`;
// "[unknown]" without the section.
std::string program_attach(const perfdata::Features& features, const AttachIndex& index,
                           uint32_t id);
inline constexpr std::string_view kAttachNoneKnown = "[none known]";

}  // namespace bpfprof::analysis
