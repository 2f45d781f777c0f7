// SPDX-License-Identifier: Apache-2.0
// `bpfprof report` and `bpfprof script`: flags, messages, exit codes (0 ok,
// 1 the input cannot be read or is corrupt, 2 bad command line or
// refused: exit_code_for).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "analysis/aggregate.h"
#include "cli/command_common.h"
#include "report/render.h"

namespace bpfprof::cli {

struct ReportFlags : ReadFlags {
  std::string input = "perf.data";
  std::vector<std::string> sort;  // each may hold comma-separated keys
  bool bpf_only = false;
  std::string format = "text";
  bool callgraph = false;
  bool instances = false;
  bool verbose = false;
  std::string cost = "total";  // --cost total|self
  int64_t pid = -1;            // --pid: only this process's samples
  std::string comm;            // --comm: only samples of threads of this name
};

struct ScriptFlags : ReadFlags {
  std::string input = "perf.data";
  std::string format = "text";
  bool hide_call_graph = false;  // -G: one line per sample
  std::string fields;            // -F: perf script's fields, comma-separated
};

CLI::App* add_report_command(CLI::App& app, ReportFlags& flags);
CLI::App* add_script_command(CLI::App& app, ScriptFlags& flags);

// Checks flags that CLI11 cannot (sort keys); the error is kInvalidArgument.
Result<report::RenderOptions> to_render_options(const ReportFlags& flags);

// Run the command, print, and return the exit code.
int run_report(const ReportFlags& flags);
int run_script(const ScriptFlags& flags);

}  // namespace bpfprof::cli
