// SPDX-License-Identifier: Apache-2.0
// Man pages and shell completions written from the CLI11 definition
// (make_command_line) at build time by bpfprof-docgen (docgen.cc), so they
// list exactly the commands and flags the parser accepts.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace bpfprof::cli {

// The names a user may type for a command's visible options: "-a",
// "--all-cpus", ... (help included; hidden options, group "", left out).
std::vector<std::string> visible_flags(const CLI::App& command);

struct DocFile {
  std::string name;  // "bpfprof.1", "bpfprof-record.1"
  std::string text;
};

// bpfprof(1) and bpfprof-COMMAND(1) for every command: roff with man(7)
// macros. `version` goes into the footer.
std::vector<DocFile> man_pages(const CLI::App& app, std::string_view version);

// A bash completion script (`complete -F _bpfprof bpfprof`) and a zsh one
// (`#compdef bpfprof`): commands, each command's flags, flag values where
// they are a fixed set, files and directories where a flag names one.
std::string bash_completion(const CLI::App& app);
std::string zsh_completion(const CLI::App& app);

}  // namespace bpfprof::cli
