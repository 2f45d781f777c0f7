// SPDX-License-Identifier: Apache-2.0
#include "cli/top_command.h"

#include <cstdio>

#include <fmt/format.h>

#include "cli/command_common.h"
#include "cli/record_command.h"
#include "perf/event_open.h"
#include "top/top.h"

namespace bpfprof::cli {

CLI::App* add_top_command(CLI::App& app, TopFlags& f) {
  CLI::App* cmd = app.add_subcommand(
      "top", "Live view: CPU share, runs and cost of every BPF program, then the hottest symbols");
  cmd->add_option("-F,--freq", f.frequency,
                  fmt::format("Sampling frequency in Hz (default {})", top::kDefaultFrequency))
      ->check(CLI::Range(uint64_t{1}, uint64_t{100000}));
  cmd->add_option("-d,--delay", f.refresh_s, "Seconds between refreshes (default 1)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--stdio", f.stdio, "Plain text, one block per refresh, instead of the screen");
  cmd->add_option("--format", f.format,
                  "Output format: text (the screen, or --stdio) or json (one object per refresh, "
                  "a line each, on stdout)")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("--instances", f.instances,
                "A program row per instance (id), not one per code (name and tag)");
  cmd->add_option("-C,--cpu", f.cpu_list, "Sample only these CPUs (e.g. 0-3,5)");
  cmd->add_option("-n,--refreshes", f.refreshes, "Stop after this many refreshes");
  cmd->add_flag("--no-bpf-stats", f.no_run_stats,
                "Do not turn on BPF run-time statistics (no runs / avg ns columns)");
  cmd->footer("Keys: s cycles the sort (CPU%, runs/s, avg ns), b toggles BPF-only symbols, "
              "i toggles a row per instance, q quits.");
  return cmd;
}

int run_top(const TopFlags& f) {
  top::TopOptions o;
  o.live.frequency = f.frequency;
  o.live.run_stats = !f.no_run_stats;
  o.refresh_s = f.refresh_s;
  o.stdio = f.stdio;
  o.json = f.format == "json";
  o.instances = f.instances;
  if (f.refreshes) o.refreshes = f.refreshes;
  if (!f.cpu_list.empty()) {
    auto cpus = perf::parse_cpu_list(f.cpu_list);
    if (!cpus.ok() || cpus->empty()) {
      std::fprintf(stderr, "bpfprof top: -C %s: not a CPU list\n", f.cpu_list.c_str());
      return 2;
    }
    o.live.cpus = std::move(cpus).value();
  }
  // Notices come before the screen takes over, so stderr is still the terminal.
  auto notice = [](std::string_view line) {
    std::fprintf(stderr, "bpfprof top: %.*s\n", static_cast<int>(line.size()), line.data());
  };
  Status s = top::run_top(o, stdout, notice);
  if (!s.ok()) {
    return fail("top", s.error());
  }
  return 0;
}

Subcommand add_top_subcommand(CLI::App& app) {
  return make_subcommand<TopFlags>(
      app, add_top_command,
      [](TopFlags& f, const std::vector<std::string>&, const std::vector<std::string>&) {
        return run_top(f);
      });
}

}  // namespace bpfprof::cli
