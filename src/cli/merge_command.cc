// SPDX-License-Identifier: Apache-2.0
#include "cli/merge_command.h"

#include <cstdio>
#include <vector>

#include "report/gzip.h"
#include "report/merge.h"
#include "report/pprof.h"
#include "report/recording.h"

namespace bpfprof::cli {
namespace {

int fail(const Error& e) {
  std::fprintf(stderr, "bpfprof merge: %s\n", e.to_string().c_str());
  return e.code == Errc::kInvalidArgument ? 2 : 1;
}

report::LoadOptions load_options(const MergeFlags& f) {
  report::LoadOptions o;
  o.symfs = f.symfs;
  o.threads = f.jobs;
  o.stacks = true;
  return o;
}

// pprof: recordings are added one at a time, so only one is in memory at once.
Result<std::string> merge_pprof(const MergeFlags& f) {
  report::PprofBuilder builder(report::BpfIdentity::kTagName, f.bpf_only);
  for (const std::string& path : f.inputs) {
    BPFPROF_ASSIGN_OR_RETURN(report::ReportData data,
                             report::load_recording(path, load_options(f)));
    // Recordings from one host keep one label; a file without a hostname is its own source.
    builder.add(data, data.header.host.empty() ? path : data.header.host);
  }
  return builder.encode();
}

Result<std::string> merge_folded(const MergeFlags& f) {
  std::vector<report::ReportData> all;
  for (const std::string& path : f.inputs) {
    BPFPROF_ASSIGN_OR_RETURN(report::ReportData data,
                             report::load_recording(path, load_options(f)));
    all.push_back(std::move(data));
  }
  std::vector<const report::ReportData*> views;
  for (const report::ReportData& d : all) views.push_back(&d);
  return report::render_folded_merged(views, f.bpf_only);
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
  cmd->add_option("-j,--jobs", f.jobs, "Worker threads for samples (default: one per CPU)");
  cmd->add_option("--symfs", f.symfs, "Look for user binaries under this directory");
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
  auto bytes = f.format == "folded" ? merge_folded(f) : merge_pprof(f);
  if (!bytes.ok()) return fail(bytes.error());
  Status written = report::write_output(f.output, *bytes);
  if (!written.ok()) return fail(written.error());
  return 0;
}

}  // namespace bpfprof::cli
