// SPDX-License-Identifier: Apache-2.0
#include "cli/command_common.h"

#include <cstdio>

namespace bpfprof::cli {

void add_read_flags(CLI::App* cmd, ReadFlags& f) {
  cmd->add_option("-j,--jobs", f.jobs, "Worker threads for samples (default: one per CPU)");
  cmd->add_option("--symfs", f.symfs, "Look for user binaries under this directory");
  cmd->add_option("--vdso", f.vdso,
                  "Name [vdso] frames from this ELF image where the recording holds none (perf's files)");
  cmd->add_flag("--full-signatures", f.full_signatures,
                "C++ functions with their parameters (default: the qualified name alone, as perf)");
  add_kernel_read_flags(cmd, f);
}

void add_kernel_read_flags(CLI::App* cmd, ReadFlags& f) {
  cmd->add_option(
      "--kallsyms", f.kallsyms,
      "Kernel symbols from this /proc/kallsyms-format file instead of the recording's snapshot");
  cmd->add_flag("-q,--quiet", f.quiet, "No progress line on stderr");
}

analysis::SessionOptions session_options(const ReadFlags& f, analysis::WalkProgress* progress) {
  analysis::SessionOptions o;
  o.symfs = f.symfs;
  o.progress = progress;
  o.kallsyms = f.kallsyms;
  o.vdso = f.vdso;
  o.full_signatures = f.full_signatures;
  return o;
}

int exit_code_for(const Error& e) {
  switch (e.code) {
    case Errc::kPermission:
    case Errc::kInvalidArgument:
    case Errc::kUnsupported:
      return 2;
    default:
      return 1;
  }
}

int fail(std::string_view command, const Error& e) {
  std::fprintf(stderr, "bpfprof %.*s: %s\n", static_cast<int>(command.size()), command.data(),
               e.to_string().c_str());
  return exit_code_for(e);
}

}  // namespace bpfprof::cli
