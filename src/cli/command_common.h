// SPDX-License-Identifier: Apache-2.0
// What the commands share: the flags of every command that reads
// recordings, declared once; how a failed command ends — one message line
// and one exit-code rule for all of them; and how one that succeeded says
// part of what it read could not be used — one warning line.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "analysis/session.h"
#include "base/diagnostics.h"
#include "base/error.h"

namespace bpfprof::cli {

// The read flags; a command's flags derive from this.
struct ReadFlags {
  unsigned jobs = 0;     // -j: worker threads for samples (0: one per CPU)
  std::string symfs;     // --symfs: prefix for user binaries
  std::string kallsyms;  // --kallsyms FILE
  std::string vdso;      // --vdso FILE
  bool full_signatures = false;  // --full-signatures
  bool quiet = false;    // -q: no progress line, no loss warning
};

// -j/--jobs, --symfs, --kallsyms, --vdso, --full-signatures and -q/--quiet.
void add_read_flags(CLI::App* cmd, ReadFlags& flags);
// --kallsyms and -q/--quiet only (annotate: no sample threads, no user code).
void add_kernel_read_flags(CLI::App* cmd, ReadFlags& flags);

// The session options the read flags ask for.
analysis::SessionOptions session_options(const ReadFlags& flags, analysis::WalkProgress* progress);

// Every command's exit code for an error: 2 when the command line is wrong
// or the system refused (permission denied, unsupported), else 1.
int exit_code_for(const Error& error);

// Prints "bpfprof <command>: <error>" on stderr; returns exit_code_for(error).
int fail(std::string_view command, const Error& error);

// The diagnostics of one recording a command read, and its path as given.
struct InputDiagnostics {
  std::string input;  // "-": stdin
  DiagCounts counts;
};

// The one line that says a command's output lacks part of what was recorded:
// every diagnostic of severity loss above zero (docs/diagnostics.md), by
// input, in name order, e.g.
//   bpfprof report: warning: perf.data: 2 records_bad, 3343 samples_bad: part
//   of the recording could not be used (see the diagnostics of bpfprof report)
// (one line, no newline). Empty when nothing was lost.
std::string loss_warning(std::string_view command, std::span<const InputDiagnostics> inputs);

// Prints loss_warning() on stderr unless it is empty or `quiet` (-q). A
// command calls it once, after its output is written: a warning, not an
// error, so the exit code stays what the output says.
void warn_of_losses(std::string_view command, std::span<const InputDiagnostics> inputs,
                    bool quiet);

}  // namespace bpfprof::cli
