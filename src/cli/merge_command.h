// SPDX-License-Identifier: Apache-2.0
// `bpfprof merge [-o FILE] [--format pprof|folded] A.data B.data ...`: one
// profile from recordings of several hosts. BPF programs are the same program
// when name and tag agree (ids are per boot), other code when symbol and dso
// agree; pprof samples carry a `host` label. Exit codes: 0 done; 1 an input
// cannot be read or the output cannot be written; 2 bad command line or refused
// (exit_code_for).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/command_common.h"
#include "cli/subcommand.h"

namespace bpfprof::cli {

struct MergeFlags : ReadFlags {
  std::vector<std::string> inputs;
  std::string output = "-";  // "-" = stdout
  std::string format = "pprof";
  bool bpf_only = false;
};

CLI::App* add_merge_command(CLI::App& app, MergeFlags& flags);
Subcommand add_merge_subcommand(CLI::App& app);
int run_merge(const MergeFlags& flags);

}  // namespace bpfprof::cli
