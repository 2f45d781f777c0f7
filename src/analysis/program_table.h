// SPDX-License-Identifier: Apache-2.0
// The report's program rows: each BPF program the recording knew, with its
// owner (loader or holders) and the owner's cgroup, its attach points, its
// sizes from the stored info and the samples whose leaf is in it. The
// owner/attach lookups themselves are declared in analysis/aggregate.h.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "analysis/report_data.h"
#include "perfdata/features.h"
#include "profile/profile.h"
#include "symbols/symbolizer.h"

namespace bpfprof::analysis {

// One row per program of `sym`, in its order (a BPF frame's bpf_program is
// its 1-based row), with the samples of `p` charged to it: self (leaf in
// it), callees and dispatch (the samples' charges). Dispatch of a hook
// several programs share is split by their self + callees (profile::split_by_weight)
// and marked estimated.
std::vector<ProgramRow> program_table(const symbols::Symbolizer& sym,
                                      const perfdata::Features& features,
                                      const profile::Profile& p);

}  // namespace bpfprof::analysis
