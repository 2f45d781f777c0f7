// SPDX-License-Identifier: Apache-2.0
// `bpfprof report` and `bpfprof script`: flags, messages, exit codes (0 ok,
// 1 the input cannot be read or is corrupt, 2 bad command line).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "analysis/aggregate.h"
#include "report/render.h"

namespace bpfprof::cli {

struct ReportFlags {
  std::string input = "perf.data";
  std::vector<std::string> sort;  // each may hold comma-separated keys
  bool bpf_only = false;
  std::string format = "text";
  bool callgraph = false;
  unsigned jobs = 0;
  std::string symfs;
  std::string kallsyms;  // --kallsyms FILE
  bool quiet = false;  // no progress line
};

struct ScriptFlags {
  std::string input = "perf.data";
  std::string format = "text";
  unsigned jobs = 0;
  std::string symfs;
  std::string kallsyms;  // --kallsyms FILE
  bool quiet = false;  // no progress line
};

CLI::App* add_report_command(CLI::App& app, ReportFlags& flags);
CLI::App* add_script_command(CLI::App& app, ScriptFlags& flags);

// Checks flags that CLI11 cannot (sort keys); the error is kInvalidArgument.
Result<report::RenderOptions> to_render_options(const ReportFlags& flags);

// Run the command, print, and return the exit code.
int run_report(const ReportFlags& flags);
int run_script(const ScriptFlags& flags);

}  // namespace bpfprof::cli
