// SPDX-License-Identifier: Apache-2.0
#include "cli/diff_command.h"

#include <cstdio>

#include "analysis/recording.h"
#include "base/output_open.h"
#include "cli/progress_meter.h"
#include "compare/diff.h"

namespace bpfprof::cli {
namespace {

}  // namespace

CLI::App* add_diff_command(CLI::App& app, DiffFlags& f) {
  CLI::App* cmd = app.add_subcommand(
      "diff", "Per BPF program and symbol: samples before, after and the delta of two recordings");
  cmd->add_option("before", f.before, "The base recording")->required();
  cmd->add_option("after", f.after, "The new recording")->required();
  cmd->add_option("--format", f.format, "Output format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--fail-above", f.fail_above,
                  "Exit 3 when a BPF program's share of samples (its --cost) grows by more than "
                  "this many percentage points (same name and tag, else same name)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--fail-above-ns", f.fail_above_ns,
                  "Exit 3 when a BPF program's ns per run grows by more than this (where both "
                  "recordings have run statistics: record --bpf-stats)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--cost", f.cost,
                  "A program's samples: total (self + callees + dispatch) or self (default total)")
      ->check(CLI::IsMember({"total", "self"}));
  add_read_flags(cmd, f);
  return cmd;
}

Subcommand add_diff_subcommand(CLI::App& app) {
  return make_subcommand<DiffFlags>(
      app, add_diff_command,
      [](DiffFlags& f, const std::vector<std::string>&, const std::vector<std::string>&) {
        return run_diff(f);
      });
}

int run_diff(const DiffFlags& f) {
  analysis::LoadOptions o;
  o.symfs = f.symfs;
  o.kallsyms = f.kallsyms;
  o.threads = f.jobs;
  o.stacks = false;  // leaf frames name symbols; charges come from the chains regardless
  ProgressMeter meter(ProgressMeter::for_stderr(f.quiet, 2), f.before + " (1 of 2)");
  o.progress = meter.progress();
  auto before = analysis::load_recording(f.before, o);
  if (!before.ok()) {
    meter.stop();
    return fail("diff", before.error());
  }
  meter.next_file(f.after + " (2 of 2)");
  auto after = analysis::load_recording(f.after, o);
  meter.stop();
  if (!after.ok()) return fail("diff", after.error());
  compare::GateOptions gate;
  gate.fail_above = f.fail_above;
  gate.fail_above_ns = f.fail_above_ns;
  gate.cost_total = f.cost != "self";
  compare::Diff d = compare::diff_reports(*before, *after, gate);
  d.before_path = f.before;
  d.after_path = f.after;
  std::string out =
      f.format == "json" ? compare::render_diff_json(d) : compare::render_diff_text(d);
  Status written = write_file("-", out);
  if (!written.ok()) return fail("diff", written.error());
  const InputDiagnostics read[] = {{f.before, before->profile.diagnostics()},
                                   {f.after, after->profile.diagnostics()}};
  warn_of_losses("diff", read, f.quiet);
  if (!d.offenders.empty()) {
    for (const compare::Offender& o : d.offenders) {
      std::fprintf(stderr, "bpfprof diff: over the limit: %s\n",
                   compare::render_offender(o).c_str());
    }
    return 3;
  }
  return 0;
}

}  // namespace bpfprof::cli
