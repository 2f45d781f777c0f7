// SPDX-License-Identifier: Apache-2.0
// bpfprof: which BPF programs (and kernel/user code) burn CPU.
#include <malloc.h>

#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/record_command.h"
#include "cli/report_command.h"

int main(int argc, char** argv) {
  // The enricher thread keeps every program's JIT image and line info until
  // the file is closed: let its heap grow in large steps instead of one
  // mprotect/brk per allocation (measured: ~10% of the enricher's CPU under churn).
  mallopt(M_TOP_PAD, 16 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  CLI::App app("bpfprof: a profiler that tells which BPF programs burn CPU", "bpfprof");
  app.require_subcommand(1);
  bpfprof::cli::RecordFlags record_flags;
  CLI::App* record = bpfprof::cli::add_record_command(app, record_flags);
  bpfprof::cli::ReportFlags report_flags;
  CLI::App* report = bpfprof::cli::add_report_command(app, report_flags);
  bpfprof::cli::ScriptFlags script_flags;
  CLI::App* script = bpfprof::cli::add_script_command(app, script_flags);
  std::vector<std::string> args(argv, argv + argc);
  auto [flag_args, command] = bpfprof::cli::split_at_dash_dash(args);
  record_flags.command = command;
  std::vector<const char*> flag_argv;
  for (const std::string& a : flag_args) flag_argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(flag_argv.size()), flag_argv.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const char* who = record->parsed()   ? "bpfprof record"
                      : report->parsed() ? "bpfprof report"
                      : script->parsed() ? "bpfprof script"
                                         : "bpfprof";
    std::fprintf(stderr, "%s: %s\n", who, e.what());
    return 2;
  }
  if (record->parsed()) return bpfprof::cli::run_record(record_flags, args);
  if (report->parsed()) return bpfprof::cli::run_report(report_flags);
  if (script->parsed()) return bpfprof::cli::run_script(script_flags);
  return 2;
}
