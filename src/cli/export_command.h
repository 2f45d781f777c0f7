// SPDX-License-Identifier: Apache-2.0
// `bpfprof export [-i FILE] --format folded|svg|html|json [-o FILE]
// [--bpf-only] [--pid N] [--time FROM,TO]`: the recording's stacks for other
// tools and for people — folded stacks, a flame graph (SVG or an interactive
// HTML page) or a JSON tree. Exit codes: 0 done (also for an empty
// recording: valid empty output and a notice on stderr); 1 the input cannot
// be read or the output cannot be written; 2 bad command line (an unsupported
// format lists the supported ones) or refused (exit_code_for).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "base/error.h"
#include "cli/command_common.h"
#include "cli/subcommand.h"

namespace bpfprof::cli {

struct ExportFlags : ReadFlags {
  std::string input = "perf.data";
  std::string format = "folded";
  std::string output;  // empty = stdout
  bool bpf_only = false;
  int64_t pid = -1;    // -1 = every process
  std::string time;    // "FROM,TO" in seconds from the first sample
  std::string title = "bpfprof flame graph";
};

CLI::App* add_export_command(CLI::App& app, ExportFlags& flags);
Subcommand add_export_subcommand(CLI::App& app);

// --time: seconds relative to the first sample, either side may be empty
// ("2," = from 2 s on, ",0.5" = the first half second). Errors are
// kInvalidArgument.
struct TimeRange {
  std::optional<double> from_s, to_s;
};
Result<TimeRange> parse_time_range(std::string_view text);

int run_export(const ExportFlags& flags);

}  // namespace bpfprof::cli
