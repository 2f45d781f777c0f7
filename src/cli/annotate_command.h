// SPDX-License-Identifier: Apache-2.0
// `bpfprof annotate [-i FILE] <program> [--format text|json]`: one BPF
// program's JIT'd instructions under its source lines, with samples. Exit
// codes: 0 done; 1 the input cannot be read, nothing matches (the closest
// names are listed), or the program has no stored code (the reason is
// printed); 2 bad command line or refused
// (exit_code_for).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "cli/command_common.h"
#include "cli/subcommand.h"

namespace bpfprof::cli {

// Of the read flags, annotate takes --kallsyms and -q only.
struct AnnotateFlags : ReadFlags {
  std::string input = "perf.data";
  std::string program;  // name, id, tag or ksym name
  std::string format = "text";
};

Subcommand add_annotate_subcommand(CLI::App& app);
int run_annotate(const AnnotateFlags& flags);

}  // namespace bpfprof::cli
