// SPDX-License-Identifier: Apache-2.0
// Identities across recordings (`bpfprof merge`, `bpfprof diff`): hosts run
// different kernels and number BPF programs with their own per-boot ids, so a
// BPF program is the same program when its tag (the hash of its
// instructions) and name agree, and other code when symbol and dso agree.
#pragma once

#include <span>
#include <string>

#include "analysis/report_data.h"

namespace bpfprof::compare {

// "name tag": the cross-recording identity of a BPF program instance.
std::string program_key(const analysis::ProgramRow& program);

// Folded stacks of all recordings together: one line per distinct stack,
// "root;...;leaf <samples>", sorted by stack, frames spelled as `bpfprof
// export --format folded` spells them (symbol, `_[k]` kernel, `_[bpf]` BPF).
// BPF functions are named by their ksym name, which carries the tag and never
// the id, so the same code from different hosts folds into one line. Samples
// without frames are "[unknown]". With `bpf_only`, only stacks whose leaf is BPF code.
std::string render_folded_merged(std::span<const analysis::ReportData* const> recordings,
                                 bool bpf_only = false);

}  // namespace bpfprof::compare
