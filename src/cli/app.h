// SPDX-License-Identifier: Apache-2.0
// The bpfprof command line as one CLI11 app: every subcommand with its flags,
// plus `help` and `version`. main() parses with it; the build-time generator
// of the man pages and shell completions (docgen.cc) walks the same
// definition, so --help, the pages and the completions cannot disagree.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/subcommand.h"

namespace bpfprof::cli {

struct CommandLine {
  std::unique_ptr<CLI::App> app;     // "bpfprof", with --help and --version
  std::vector<Subcommand> commands;  // in the order usage and --help list them
};

CommandLine make_command_line();

// What `bpfprof` alone prints (to stderr, exit 2): the commands, one line each.
std::string short_usage(const CLI::App& app);

// Parses argv and runs the command; returns the exit code.
int run_command_line(const std::vector<std::string>& argv);

}  // namespace bpfprof::cli
