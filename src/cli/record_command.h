// SPDX-License-Identifier: Apache-2.0
// `bpfprof record`: flags (spelled as perf record's where they overlap), the
// messages a user sees, and exit codes (0 done, 1 failed while recording or
// writing, 2 refused: bad flags, unknown event, missing privileges).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "cli/command_common.h"
#include "record/options.h"

namespace bpfprof::cli {

// The flags as parsed, before they are turned into RecordOptions.
struct RecordFlags {
  bool all_cpus = false;
  std::string cpu_list;
  int pid = 0;
  std::string event;
  uint64_t frequency = 0;
  uint64_t period = 0;
  bool callchain = false;
  bool no_callchain = false;
  std::string output = "perf.data";
  double duration_s = 0;
  uint32_t mmap_pages = record::kDefaultMmapPages;
  bool quiet = false;
  bool bpf_stats = false;
  bool cgroup = false;
  int compression_level = 0;                 // -z / --compression-level[=n]
  std::string switch_output;                 // --switch-output[=signal|SIZE|TIME]
  uint32_t switch_max_files = 0;             // --switch-max-files N
  std::string enricher_sched = "fifo";       // hidden: fifo | nice | other (measurements)
  std::string enricher_threads = "per-cpu";  // hidden: per-cpu | one
  std::string enrich = "in-kernel";          // in-kernel | user
  uint32_t capture_ring_bytes = record::kDefaultCaptureRingBytes;  // hidden: tests a full ring
  std::vector<std::string> command;  // what followed "--" (see split_at_dash_dash)
  CLI::App* app = nullptr;           // the subcommand, to ask which flags were given
};

// Splits argv at the first "--": CLI11 parses the part before it, the part
// after is the command verbatim. Without "--", the command starts at the first
// non-flag (CLI11's prefix_command) and the second vector is empty.
std::pair<std::vector<std::string>, std::vector<std::string>> split_at_dash_dash(
    const std::vector<std::string>& argv);

// Adds the `record` subcommand to `app`, filling `flags` when parsed.
CLI::App* add_record_command(CLI::App& app, RecordFlags& flags);

// Turns parsed flags into options (parses -C, validates). `argv` is the whole
// command line, stored as the CMDLINE feature.
Result<record::RecordOptions> to_options(const RecordFlags& flags,
                                         const std::vector<std::string>& argv);

// Runs the recording and prints; returns the exit code.
int run_record(const RecordFlags& flags, const std::vector<std::string>& argv);

}  // namespace bpfprof::cli
