// SPDX-License-Identifier: Apache-2.0
// A recording loaded whole for exporters and cross-recording commands
// (pprof, merge, diff): report data with full callchains and the JIT
// addresses of every BPF function (which pprof mappings need).
#pragma once

#include <string>

#include "analysis/report_data.h"
#include "analysis/walk_progress.h"
#include "base/error.h"
#include "symbols/symbolizer.h"

namespace bpfprof::analysis {

// Fills FunctionRow::addr/len of data.programs from the symbolizer's program
// table, which aggregate() built them from (same order, same functions).
void add_bpf_addresses(ReportData& data, const symbols::Symbolizer& symbolizer);

struct LoadOptions {
  std::string symfs;
  std::string kallsyms;  // SessionOptions::kallsyms
  unsigned threads = 0;  // 0 = one per CPU
  bool stacks = true;    // whole callchains (pprof, folded); false = leaf frames only
  bool lines = false;    // BPF source lines on BPF frames
  // Each sample's cgroup, where the recording has them (pprof's `cgroup` label).
  bool cgroups = false;
  WalkProgress* progress = nullptr;  // both passes report here (SessionOptions::progress)
};

// Opens `path`, runs both passes, adds the BPF addresses. The error names the file.
Result<ReportData> load_recording(const std::string& path, const LoadOptions& options);

}  // namespace bpfprof::analysis
