// SPDX-License-Identifier: Apache-2.0
// bpfprof: which BPF programs (and kernel/user code) burn CPU.
#include <malloc.h>

#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/export_command.h"
#include "cli/diff_command.h"
#include "cli/merge_command.h"
#include "cli/annotate_command.h"
#include "cli/record_command.h"
#include "cli/report_command.h"
#include "cli/subcommand.h"
#include "cli/top_command.h"

int main(int argc, char** argv) {
  // The enricher thread keeps every program's JIT image and line info until
  // the file is closed: let its heap grow in large steps instead of one
  // mprotect/brk per allocation (measured: ~10% of the enricher's CPU under churn).
  mallopt(M_TOP_PAD, 16 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  CLI::App app("bpfprof: a profiler that tells which BPF programs burn CPU", "bpfprof");
  app.require_subcommand(1);
  using bpfprof::cli::make_subcommand;
  using Args = std::vector<std::string>;
  // One line per command.
  const std::vector<bpfprof::cli::Subcommand> commands = {
      make_subcommand<bpfprof::cli::RecordFlags>(
          app, bpfprof::cli::add_record_command,
          [](bpfprof::cli::RecordFlags& f, const Args& argv, const Args& command) {
            f.command = command;
            return bpfprof::cli::run_record(f, argv);
          }),
      make_subcommand<bpfprof::cli::ReportFlags>(
          app, bpfprof::cli::add_report_command,
          [](bpfprof::cli::ReportFlags& f, const Args&, const Args&) {
            return bpfprof::cli::run_report(f);
          }),
      make_subcommand<bpfprof::cli::ScriptFlags>(
          app, bpfprof::cli::add_script_command,
          [](bpfprof::cli::ScriptFlags& f, const Args&, const Args&) {
            return bpfprof::cli::run_script(f);
          }),
      bpfprof::cli::add_export_subcommand(app),
      bpfprof::cli::add_top_subcommand(app),
      bpfprof::cli::add_merge_subcommand(app),
      bpfprof::cli::add_diff_subcommand(app),
      bpfprof::cli::add_annotate_subcommand(app),
  };
  std::vector<std::string> args(argv, argv + argc);
  auto [flag_args, command] = bpfprof::cli::split_at_dash_dash(args);
  std::vector<const char*> flag_argv;
  for (const std::string& a : flag_args) flag_argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(flag_argv.size()), flag_argv.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string who = "bpfprof";
    for (const auto& c : commands)
      if (c.app->parsed()) who += " " + c.app->get_name();
    std::fprintf(stderr, "%s: %s\n", who.c_str(), e.what());
    return 2;
  }
  for (const auto& c : commands)
    if (c.app->parsed()) return c.run(args, command);
  return 2;
}
