// SPDX-License-Identifier: Apache-2.0
// One `bpfprof <command>`: its CLI11 subcommand and how to run it once parsed.
// Each command file offers `Subcommand add_<name>_subcommand(CLI::App&)` that
// owns its flags; main.cc lists them, one line per command.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace bpfprof::cli {

struct Subcommand {
  CLI::App* app = nullptr;
  // argv: the whole command line; command: what followed "--" (record only).
  std::function<int(const std::vector<std::string>& argv, const std::vector<std::string>& command)>
      run;
};

// Binds flags of type F (kept alive by the returned Subcommand) to `add`, and
// `run` to them.
template <class F, class Add, class Run>
Subcommand make_subcommand(CLI::App& app, Add add, Run run) {
  auto flags = std::make_shared<F>();
  Subcommand s;
  s.app = add(app, *flags);
  s.run = [flags, run](const std::vector<std::string>& argv,
                       const std::vector<std::string>& command) {
    return run(*flags, argv, command);
  };
  return s;
}

}  // namespace bpfprof::cli
