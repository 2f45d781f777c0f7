// SPDX-License-Identifier: Apache-2.0
#include "cli/merge_command.h"

#include <cstdio>
#include <vector>

#include <fmt/format.h>

#include "analysis/recording.h"
#include "base/output_open.h"
#include "cli/progress_meter.h"
#include "compare/merge.h"
#include "export/pprof.h"

namespace bpfprof::cli {
namespace {

// What the progress line calls the i-th input.
std::string input_label(const MergeFlags& f, size_t i) {
  return fmt::format("{} ({} of {})", f.inputs[i], i + 1, f.inputs.size());
}

// Loads the i-th input; the meter shows which, `read` gets its diagnostics.
Result<analysis::ReportData> load(const MergeFlags& f, size_t i, ProgressMeter& meter,
                                  std::vector<InputDiagnostics>& read) {
  analysis::LoadOptions o;
  o.symfs = f.symfs;
  o.kallsyms = f.kallsyms;
  o.threads = f.jobs;
  o.stacks = true;
  o.cgroups = f.format == "pprof";  // its `cgroup` label
  o.progress = meter.progress();
  if (i > 0) meter.next_file(input_label(f, i));
  auto data = analysis::load_recording(f.inputs[i], o);
  if (data.ok()) read.push_back({f.inputs[i], data->profile.diagnostics()});
  return data;
}

// pprof: recordings are added one at a time, so only one is in memory at once.
Result<std::string> merge_pprof(const MergeFlags& f, ProgressMeter& meter,
                                std::vector<InputDiagnostics>& read) {
  exporter::PprofBuilder builder(exporter::BpfIdentity::kTagName, f.bpf_only);
  for (size_t i = 0; i < f.inputs.size(); i++) {
    const std::string& path = f.inputs[i];
    BPFPROF_ASSIGN_OR_RETURN(analysis::ReportData data, load(f, i, meter, read));
    // Recordings from one host keep one label; a file without a hostname is its own source.
    builder.add(data, data.header.host.empty() ? path : data.header.host);
  }
  return builder.encode();
}

Result<std::string> merge_folded(const MergeFlags& f, ProgressMeter& meter,
                                 std::vector<InputDiagnostics>& read) {
  std::vector<analysis::ReportData> all;
  for (size_t i = 0; i < f.inputs.size(); i++) {
    BPFPROF_ASSIGN_OR_RETURN(analysis::ReportData data, load(f, i, meter, read));
    all.push_back(std::move(data));
  }
  std::vector<const analysis::ReportData*> views;
  for (const analysis::ReportData& d : all) views.push_back(&d);
  return compare::render_folded_merged(views, f.bpf_only);
}

}  // namespace

CLI::App* add_merge_command(CLI::App& app, MergeFlags& f) {
  CLI::App* cmd = app.add_subcommand(
      "merge", "One profile (pprof or folded) from the recordings of several hosts");
  cmd->add_option("inputs", f.inputs, "Recordings to merge")->required();
  cmd->add_option("-o,--output", f.output, "Output file (default stdout)");
  cmd->add_option("--format", f.format, "Output format: pprof (gzip) or folded")
      ->check(CLI::IsMember({"pprof", "folded"}));
  cmd->add_flag("--bpf-only", f.bpf_only, "Only samples whose leaf frame is BPF code");
  add_read_flags(cmd, f);
  return cmd;
}

Subcommand add_merge_subcommand(CLI::App& app) {
  return make_subcommand<MergeFlags>(
      app, add_merge_command,
      [](MergeFlags& f, const std::vector<std::string>&, const std::vector<std::string>&) {
        return run_merge(f);
      });
}

int run_merge(const MergeFlags& f) {
  ProgressMeter meter(ProgressMeter::for_stderr(f.quiet, 2), input_label(f, 0));
  std::vector<InputDiagnostics> read;
  auto bytes = f.format == "folded" ? merge_folded(f, meter, read) : merge_pprof(f, meter, read);
  meter.stop();
  if (!bytes.ok()) return fail("merge", bytes.error());
  Status written = write_file(f.output, *bytes);
  if (!written.ok()) return fail("merge", written.error());
  warn_of_losses("merge", read, f.quiet);
  return 0;
}

}  // namespace bpfprof::cli
