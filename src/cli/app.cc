// SPDX-License-Identifier: Apache-2.0
#include "cli/app.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include <fmt/format.h>

#include "base/build_info.h"
#include "cli/annotate_command.h"
#include "cli/diff_command.h"
#include "cli/export_command.h"
#include "cli/merge_command.h"
#include "cli/record_command.h"
#include "cli/report_command.h"
#include "cli/top_command.h"

namespace bpfprof::cli {
namespace {

using Args = std::vector<std::string>;

// Whether `name` is one of app's subcommands.
bool is_command(const CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == name) return true;
  }
  return false;
}

struct HelpFlags {
  std::string command;
};

Subcommand add_help_subcommand(CLI::App& app) {
  return make_subcommand<HelpFlags>(
      app,
      [](CLI::App& parent, HelpFlags& f) {
        CLI::App* cmd = parent.add_subcommand(
            "help", "The flags of a command (the same as bpfprof COMMAND --help)");
        cmd->add_option("command", f.command, "A command; without one, bpfprof --help");
        return cmd;
      },
      [&app](HelpFlags& f, const Args&, const Args&) {
        const CLI::App* target = &app;
        std::string prev;
        if (!f.command.empty()) {
          if (!is_command(app, f.command)) {
            std::fprintf(stderr, "bpfprof help: '%s' is not a bpfprof command\n%s",
                         f.command.c_str(), short_usage(app).c_str());
            return 2;
          }
          target = app.get_subcommand(f.command);
          prev = app.get_name();
        }
        // What CLI11 prints for `bpfprof [COMMAND] --help`.
        std::string text = app.get_formatter()->make_help(
            target, prev.empty() ? target->get_name() : prev + " " + target->get_name(),
            CLI::AppFormatMode::Normal);
        std::fwrite(text.data(), 1, text.size(), stdout);
        return std::fflush(stdout) == 0 ? 0 : 1;
      });
}

struct VersionFlags {};

Subcommand add_version_subcommand(CLI::App& app) {
  return make_subcommand<VersionFlags>(
      app,
      [](CLI::App& parent, VersionFlags&) {
        return parent.add_subcommand(
            "version", "The version of bpfprof, its commit and the libraries it uses");
      },
      [](VersionFlags&, const Args&, const Args&) {
        std::string text = build_info_lines(build_info());
        std::fwrite(text.data(), 1, text.size(), stdout);
        return std::fflush(stdout) == 0 ? 0 : 1;
      });
}

}  // namespace

CommandLine make_command_line() {
  CommandLine cl;
  cl.app = std::make_unique<CLI::App>(
      "bpfprof: a profiler that tells which BPF programs burn CPU", "bpfprof");
  CLI::App& app = *cl.app;
  app.require_subcommand(1);
  app.set_version_flag(
      "--version",
      [] {
        std::string lines = build_info_lines(build_info());
        lines.pop_back();  // CLI11 ends it with a newline
        return lines;
      },
      "The version of bpfprof, its commit and the libraries it uses");
  // One line per command.
  cl.commands = {
      make_subcommand<RecordFlags>(app, add_record_command,
                                   [](RecordFlags& f, const Args& argv, const Args& command) {
                                     f.command = command;
                                     return run_record(f, argv);
                                   }),
      make_subcommand<ReportFlags>(
          app, add_report_command,
          [](ReportFlags& f, const Args&, const Args&) { return run_report(f); }),
      make_subcommand<ScriptFlags>(
          app, add_script_command,
          [](ScriptFlags& f, const Args&, const Args&) { return run_script(f); }),
      add_export_subcommand(app),
      add_top_subcommand(app),
      add_merge_subcommand(app),
      add_diff_subcommand(app),
      add_annotate_subcommand(app),
      add_help_subcommand(app),
      add_version_subcommand(app),
  };
  return cl;
}

std::string short_usage(const CLI::App& app) {
  std::string out = fmt::format("usage: {} <command> [flags] [args]\n\ncommands:\n", app.get_name());
  size_t width = 0;
  for (const CLI::App* sub : app.get_subcommands({})) width = std::max(width, sub->get_name().size());
  for (const CLI::App* sub : app.get_subcommands({})) {
    out += fmt::format("  {:<{}}  {}\n", sub->get_name(), width, sub->get_description());
  }
  out += fmt::format("\n'{0} help <command>' lists a command's flags; '{0} --version' the versions.\n",
                     app.get_name());
  return out;
}

int run_command_line(const std::vector<std::string>& args) {
  CommandLine cl = make_command_line();
  CLI::App& app = *cl.app;
  if (args.size() <= 1) {
    std::fputs(short_usage(app).c_str(), stderr);
    return 2;
  }
  if (!args[1].starts_with("-") && !is_command(app, args[1])) {
    std::fprintf(stderr, "bpfprof: '%s' is not a bpfprof command\n%s", args[1].c_str(),
                 short_usage(app).c_str());
    return 2;
  }
  auto [flag_args, command] = split_at_dash_dash(args);
  std::vector<const char*> flag_argv;
  for (const std::string& a : flag_args) flag_argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(flag_argv.size()), flag_argv.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string who = "bpfprof";
    for (const auto& c : cl.commands)
      if (c.app->parsed()) who += " " + c.app->get_name();
    std::fprintf(stderr, "%s: %s\n", who.c_str(), e.what());
    return 2;
  }
  for (const auto& c : cl.commands)
    if (c.app->parsed()) return c.run(args, command);
  return 2;
}

}  // namespace bpfprof::cli
