// SPDX-License-Identifier: Apache-2.0
// `bpfprof top`: a live view of which BPF programs (then kernel and user
// symbols) take the CPU, refreshed every second. Exit codes: 0 quit (q,
// SIGINT/SIGTERM, or -n refreshes done), 1 failed while running, 2 refused
// (missing privilege, bad flags, no terminal).
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/subcommand.h"
#include "top/live_session.h"

namespace bpfprof::cli {

struct TopFlags {
  uint64_t frequency = top::kDefaultFrequency;
  double refresh_s = 1.0;
  bool stdio = false;
  std::string format = "text";
  std::string cpu_list;
  uint64_t refreshes = 0;  // 0: until quit
  bool no_run_stats = false;
  bool instances = false;
};

CLI::App* add_top_command(CLI::App& app, TopFlags& flags);

// Runs the live view; returns the exit code.
int run_top(const TopFlags& flags);

// The entry main.cc lists.
Subcommand add_top_subcommand(CLI::App& app);

}  // namespace bpfprof::cli
