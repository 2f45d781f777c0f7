// SPDX-License-Identifier: Apache-2.0
#include "cli/annotate_command.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "analysis/session.h"
#include "annotate/annotate.h"
#include "cli/progress_meter.h"

namespace bpfprof::cli {
namespace {

CLI::App* add_flags(CLI::App& app, AnnotateFlags& f) {
  CLI::App* cmd = app.add_subcommand(
      "annotate", "A BPF program's JIT'd instructions under its source lines, with samples");
  cmd->add_option("-i,--input", f.input, "Input file (default perf.data)");
  cmd->add_option("program", f.program,
                  "Program name (all instances of its code), id (that instance), tag or ksym name")
      ->required();
  cmd->add_option("--format", f.format, "Output format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  add_kernel_read_flags(cmd, f);
  return cmd;
}

}  // namespace

Subcommand add_annotate_subcommand(CLI::App& app) {
  return make_subcommand<AnnotateFlags>(
      app, add_flags, [](AnnotateFlags& f, const std::vector<std::string>&,
                         const std::vector<std::string>&) { return run_annotate(f); });
}

int run_annotate(const AnnotateFlags& f) {
  // Only BPF leaf frames matter here: user binaries are never opened.
  ProgressMeter meter(ProgressMeter::for_stderr(f.quiet, 2), f.input);
  auto session = analysis::Session::open(
      f.input, analysis::SessionOptions{"", false, meter.progress(), f.kallsyms});
  if (!session.ok()) {
    meter.stop();
    return fail("annotate", session.error());
  }
  meter.next_pass();
  auto a = annotate::annotate(**session, f.program);
  meter.stop();
  if (!a.ok()) return fail("annotate", a.error());
  // Nothing to show at all: say why on stderr rather than print empty listings.
  if (std::all_of(a->listings.begin(), a->listings.end(),
                  [](const annotate::Listing& l) { return !l.unavailable.empty(); })) {
    for (const annotate::Listing& l : a->listings) {
      std::fprintf(stderr, "bpfprof annotate: %s\n", l.unavailable.c_str());
    }
    return 1;
  }
  const bool color = f.format == "text" && ::isatty(STDOUT_FILENO);
  std::string out = f.format == "json" ? annotate::render_annotate_json(*a)
                                       : annotate::render_annotate_text(*a, color);
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0) {
    return fail("annotate", make_sys_error("writing the listing", errno));
  }
  const InputDiagnostics read[] = {{f.input, (*session)->diagnostics()}};
  warn_of_losses("annotate", read, f.quiet);
  return 0;
}

}  // namespace bpfprof::cli
