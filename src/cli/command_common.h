// SPDX-License-Identifier: Apache-2.0
// What the commands share: the flags of every command that reads
// recordings, declared once, and how a failed command ends — one message
// line and one exit-code rule for all of them.
#pragma once

#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "analysis/session.h"
#include "base/error.h"

namespace bpfprof::cli {

// The read flags; a command's flags derive from this.
struct ReadFlags {
  unsigned jobs = 0;     // -j: worker threads for samples (0: one per CPU)
  std::string symfs;     // --symfs: prefix for user binaries
  std::string kallsyms;  // --kallsyms FILE
  std::string vdso;      // --vdso FILE
  bool full_signatures = false;  // --full-signatures
  bool quiet = false;    // -q: no progress line
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

}  // namespace bpfprof::cli
