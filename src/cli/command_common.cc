// SPDX-License-Identifier: Apache-2.0
#include "cli/command_common.h"

#include <cstdio>

#include <fmt/format.h>

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
  cmd->add_flag("-q,--quiet", f.quiet, "No progress line and no warning of losses on stderr");
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

namespace {

// "2 records_bad, 3343 samples_bad": the loss-severity diagnostics above zero.
std::string losses(const DiagCounts& counts) {
  std::string out;
  for (Diag d : kDiagnosticsByName) {
    const DiagInfo& info = diag_info(d);
    if (info.severity != DiagInfo::Severity::kLoss || counts[d] == 0) continue;
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", counts[d], info.name);
  }
  return out;
}

}  // namespace

std::string loss_warning(std::string_view command, std::span<const InputDiagnostics> inputs) {
  std::string named;
  size_t lossy = 0;
  for (const InputDiagnostics& in : inputs) {
    const std::string lost = losses(in.counts);
    if (lost.empty()) continue;
    named += fmt::format("{}{}: {}", lossy++ ? "; " : "", in.input == "-" ? "stdin" : in.input,
                         lost);
  }
  if (lossy == 0) return "";
  return fmt::format(
      "bpfprof {}: warning: {}: part of the {} could not be used (see the diagnostics of bpfprof "
      "report)",
      command, named, lossy > 1 ? "recordings" : "recording");
}

void warn_of_losses(std::string_view command, std::span<const InputDiagnostics> inputs,
                    bool quiet) {
  if (quiet) return;
  const std::string line = loss_warning(command, inputs);
  if (!line.empty()) std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace bpfprof::cli
