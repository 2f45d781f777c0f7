// SPDX-License-Identifier: Apache-2.0
#include "analysis/recording.h"

#include "analysis/aggregate.h"
#include "analysis/session.h"

namespace bpfprof::analysis {

void add_bpf_addresses(ReportData& data, const symbols::Symbolizer& symbolizer) {
  const std::vector<symbols::BpfProgram>& progs = symbolizer.bpf_programs();
  for (size_t i = 0; i < data.programs.size() && i < progs.size(); i++) {
    std::vector<FunctionRow>& rows = data.programs[i].functions;
    const std::vector<symbols::BpfFunction>& fns = progs[i].functions;
    for (size_t f = 0; f < rows.size() && f < fns.size(); f++) {
      rows[f].addr = fns[f].addr;
      rows[f].len = fns[f].len;
    }
  }
}

Result<ReportData> load_recording(const std::string& path, const LoadOptions& options) {
  auto session =
      Session::open(path, SessionOptions{options.symfs, true, options.progress, options.kallsyms});
  if (!session.ok()) return std::move(session).error().with_context(path);
  if (options.progress) options.progress->next_pass();
  AggregateOptions agg;
  agg.stacks = options.stacks;
  agg.lines = options.lines;
  agg.cgroups = options.cgroups && (*session)->samples_have_cgroups();
  agg.threads = options.threads;
  ReportData data = aggregate(**session, agg);
  add_bpf_addresses(data, (*session)->symbolizer());
  return data;
}

}  // namespace bpfprof::analysis
