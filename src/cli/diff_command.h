// SPDX-License-Identifier: Apache-2.0
// `bpfprof diff BASE.data NEW.data [--format text|json]`: per BPF program
// (name + tag) and per leaf symbol (symbol + dso), samples before and after,
// their delta, and the same as percents of each recording's own samples;
// sorted by |delta|. `--fail-above P` / `--fail-above-ns N` gate the change
// (compare/diff.h). Exit codes: 0 done; 1 an input cannot be read; 2 bad
// command line or refused (exit_code_for); 3 a BPF program is over the gate.
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/command_common.h"
#include "cli/subcommand.h"

namespace bpfprof::cli {

struct DiffFlags : ReadFlags {
  std::string before, after;
  std::string format = "text";
  std::optional<double> fail_above, fail_above_ns;
  std::string cost = "total";  // --cost total|self
};

CLI::App* add_diff_command(CLI::App& app, DiffFlags& flags);
Subcommand add_diff_subcommand(CLI::App& app);
int run_diff(const DiffFlags& flags);

}  // namespace bpfprof::cli
