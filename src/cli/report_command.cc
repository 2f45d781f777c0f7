// SPDX-License-Identifier: Apache-2.0
#include "cli/report_command.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "analysis/enrichment.h"
#include "analysis/session.h"
#include "cli/progress_meter.h"
#include "script/script.h"

namespace bpfprof::cli {
namespace {

void add_common(CLI::App* cmd, std::string& input, std::string& format, ReadFlags& read) {
  cmd->add_option("-i,--input", input, "Input file (default perf.data)");
  cmd->add_option("--format", format, "Output format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  add_read_flags(cmd, read);
}

}  // namespace

CLI::App* add_report_command(CLI::App& app, ReportFlags& f) {
  CLI::App* cmd = app.add_subcommand(
      "report", "Which BPF programs, kernel and user code took the samples of a recording");
  add_common(cmd, f.input, f.format, f);
  cmd->add_option("-s,--sort", f.sort,
                  "Group by these keys (comma-separated or repeated): " +
                      profile::valid_sort_keys() + " (default sym)");
  cmd->add_flag("--bpf-only", f.bpf_only,
                "Only samples charged to BPF programs (with --cost self: whose leaf is BPF code)");
  cmd->add_option("--cost", f.cost,
                  "What a program costs: total (self + callees + dispatch) or self (default "
                  "total); orders the program table and counts --sort prog/owner/attach")
      ->check(CLI::IsMember({"total", "self"}));
  cmd->add_option("--pid", f.pid, "Only samples of this process")->check(CLI::NonNegativeNumber);
  cmd->add_option("--comm", f.comm, "Only samples of threads with this command name");
  cmd->add_flag("-g,--call-graph", f.callgraph, "Callers tree below each entry");
  cmd->add_flag("--instances", f.instances,
                "Program table: one row per program instance (default: one per name and tag)");
  cmd->add_flag("-v,--verbose", f.verbose,
                "Program table: JIT and translated sizes, verified instructions and "
                "programs' metadata");
  return cmd;
}

CLI::App* add_script_command(CLI::App& app, ScriptFlags& f) {
  CLI::App* cmd = app.add_subcommand(
      "script",
      "Every sample in time order, as perf script prints it: with its callchain, one frame a "
      "line, for recordings with callchains; else one line: comm pid/tid [cpu] time: ip sym+off (dso)");
  add_common(cmd, f.input, f.format, f);
  cmd->add_flag("-G,--hide-call-graph", f.hide_call_graph,
                "One line per sample, the leaf only, even for recordings with callchains");
  cmd->add_option("-F,--fields", f.fields,
                  "perf script's fields, comma-separated: comm, tid, pid, time, cpu, event, ip, "
                  "sym, symoff, dso, period (default with callchains: all but pid)");
  return cmd;
}

Result<report::RenderOptions> to_render_options(const ReportFlags& f) {
  report::RenderOptions o;
  auto keys = profile::parse_sort_keys(f.sort);
  if (!keys.ok()) return std::move(keys).error();
  o.keys = std::move(keys).value();
  o.bpf_only = f.bpf_only;
  o.callgraph = f.callgraph;
  o.instances = f.instances;
  o.verbose = f.verbose;
  o.cost_total = f.cost != "self";
  return o;
}

int run_report(const ReportFlags& f) {
  auto options = to_render_options(f);
  if (!options.ok()) return fail("report", options.error());
  ProgressMeter meter(ProgressMeter::for_stderr(f.quiet, 2), f.input);
  auto session = analysis::Session::open(
      f.input, session_options(f, meter.progress()));
  if (!session.ok()) {
    meter.stop();
    return fail("report", session.error());
  }
  analysis::AggregateOptions agg;
  agg.stacks = f.callgraph;
  agg.lines = std::find(options->keys.begin(), options->keys.end(), profile::SortKey::kLine) !=
              options->keys.end();
  agg.cgroups = profile::needs_cgroups(options->keys);
  agg.threads = f.jobs;
  if (f.pid >= 0) agg.filter.pid = static_cast<uint32_t>(f.pid);
  agg.filter.comm = f.comm;
  meter.next_pass();
  analysis::ReportData data = analysis::aggregate(**session, agg);
  meter.stop();
  analysis::add_enrichment((*session)->reader().features(), data);
  std::string out = f.format == "json" ? report::render_json(data, *options)
                                       : report::render_text(data, *options);
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0) {
    return fail("report", make_sys_error("writing the report", errno));
  }
  const InputDiagnostics read[] = {{f.input, data.profile.diagnostics()}};
  warn_of_losses("report", read, f.quiet);
  return 0;
}

int run_script(const ScriptFlags& f) {
  uint32_t fields = 0;
  if (!f.fields.empty()) {
    auto parsed = script::parse_fields(f.fields);
    if (!parsed.ok()) return fail("script", parsed.error());
    fields = *parsed;
  }
  // Only pass 1: the second walk writes the lines as it goes.
  ProgressMeter meter(ProgressMeter::for_stderr(f.quiet, 1), f.input);
  auto session = analysis::Session::open(
      f.input, session_options(f, meter.progress()));
  meter.stop();
  if (!session.ok()) return fail("script", session.error());
  script::ScriptOptions o;
  o.format = f.format == "json" ? script::ScriptFormat::kJson : script::ScriptFormat::kText;
  o.threads = f.jobs;
  o.callchain = !f.hide_call_graph && script::has_callchains(**session);
  if (fields != 0) {
    o.fields = fields;
  } else if (o.callchain) {
    o.fields = script::kDefaultFields;
  }
  Status written = script::write_script(**session, o, stdout);
  if (!written.ok()) return fail("script", written.error());
  // What pass 1 could not use: script has no pass that counts samples.
  const InputDiagnostics read[] = {{f.input, (*session)->diagnostics()}};
  warn_of_losses("script", read, f.quiet);
  return 0;
}

}  // namespace bpfprof::cli
