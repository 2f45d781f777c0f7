// SPDX-License-Identifier: Apache-2.0
#include "cli/record_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "perf/event_open.h"
#include "record/progress.h"
#include "record/recorder.h"

namespace bpfprof::cli {

std::pair<std::vector<std::string>, std::vector<std::string>> split_at_dash_dash(
    const std::vector<std::string>& argv) {
  for (size_t i = 0; i < argv.size(); i++) {
    if (argv[i] == "--") {
      return {std::vector<std::string>(argv.begin(), argv.begin() + static_cast<long>(i)),
              std::vector<std::string>(argv.begin() + static_cast<long>(i) + 1, argv.end())};
    }
  }
  return {argv, {}};
}

CLI::App* add_record_command(CLI::App& app, RecordFlags& f) {
  CLI::App* rec = app.add_subcommand(
      "record", "Record samples and BPF program lifecycle into perf.data (Linux perf format)");
  f.app = rec;
  rec->add_flag("-a,--all-cpus", f.all_cpus, "System-wide collection from all CPUs");
  rec->add_option("-C,--cpu", f.cpu_list, "Only these CPUs (e.g. 0-3,5)");
  rec->add_option("-p,--pid", f.pid, "Record the threads of this existing process");
  rec->add_option("-e,--event", f.event,
                  "Sampling event: " + perf::supported_events() + " (default cycles)");
  auto* freq = rec->add_option("-F,--freq", f.frequency, "Sampling frequency in Hz (default 4000)");
  auto* period = rec->add_option("-c,--count", f.period, "Sample every N events");
  freq->excludes(period);
  rec->add_flag("-g", f.callchain,
                "Record call graphs with user stacks (kernel stacks are recorded by default)");
  rec->add_flag("--no-callchain", f.no_callchain,
                "No callchains: a BPF program's cost is then its self samples alone")
      ->excludes("-g");
  rec->add_option("-o,--output", f.output, "Output file (default perf.data)");
  rec->add_option("-d,--duration", f.duration_s, "Stop after this many seconds");
  rec->add_option("-m,--mmap-pages", f.mmap_pages,
                  "Ring buffer pages per CPU, a power of two (default 1024)");
  rec->add_flag("-q,--quiet", f.quiet, "No progress and no summary");
  rec->add_flag("--bpf-stats", f.bpf_stats,
                "Turn on the kernel's BPF run statistics (about 20 ns per program run) and store "
                "each program's run count and run time");
  rec->add_flag("--cgroup", f.cgroup,
                "Record each sample's cgroup (v2) and the cgroups' paths, as perf's "
                "--all-cgroups (report --sort cgroup,container)");
  // perf's -z, --compression-level[=n]: a value only after '=' (CLI11 reads
  // -z5 as -z -5, which is refused below).
  rec->add_flag("-z{1},--compression-level{1}", f.compression_level,
                "Compress the ring data with zstd: -z is level 1 (fastest), "
                "--compression-level=n picks 1..22 (0 means 1, more than 22 means 22, as perf)");
  // perf's --switch-output[=mode]: a value only after '=', "signal" without.
  rec->add_flag("--switch-output{signal}", f.switch_output,
                "A new output file, self-contained and readable by perf, on SIGUSR2 (signal, "
                "the default), per size of data written (100M: units B, K, M, G) or per period "
                "(10s: units s, m, h, d); each done file is renamed <output>.<timestamp>");
  rec->add_option("--switch-max-files", f.switch_max_files,
                  "With --switch-output, keep only the newest N files");
  rec->add_option("--enrich", f.enrich,
                  "How programs loaded while recording are enriched: in-kernel (captured at load, "
                  "the default; falls back to user where the kernel refuses) or user (a thread "
                  "per CPU woken on every load takes a reference by id)")
      ->check(CLI::IsMember({"in-kernel", "user"}));
  // Not in --help: a tiny capture ring tests the fallback of a full one.
  rec->add_option("--capture-ring-bytes", f.capture_ring_bytes, "power of two, >= 4096")->group("");
  // Not in --help: they exist to measure what the enricher's defaults buy.
  rec->add_option("--enricher-sched", f.enricher_sched, "fifo, nice or other")
      ->check(CLI::IsMember({"fifo", "nice", "other"}))
      ->group("");
  rec->add_option("--enricher-threads", f.enricher_threads, "per-cpu (pinned) or one")
      ->check(CLI::IsMember({"per-cpu", "one"}))
      ->group("");
  // Everything from the first non-flag on is the command, its own flags
  // included: prefix_command() leaves those tokens in remaining().
  rec->prefix_command();
  rec->footer("bpfprof record [flags] [--] <command> [args...] records while <command> runs.");
  return rec;
}

Result<record::RecordOptions> to_options(const RecordFlags& f,
                                         const std::vector<std::string>& argv) {
  record::RecordOptions o;
  const CLI::App* app = f.app;
  auto given = [&](const char* name) { return app && app->count(name) > 0; };
  o.system_wide = f.all_cpus;
  if (!f.cpu_list.empty()) {
    auto cpus = perf::parse_cpu_list(f.cpu_list);
    if (!cpus.ok() || cpus->empty()) {
      return make_error(Errc::kInvalidArgument, fmt::format("-C {}: not a CPU list", f.cpu_list));
    }
    o.cpus = std::move(cpus).value();
  }
  if (given("-p")) o.pid = f.pid;
  if (given("-e")) o.event = f.event;
  if (given("-F")) o.frequency = f.frequency;
  if (given("-c")) o.period = f.period;
  if (given("-d")) o.duration_s = f.duration_s;
  o.callchain = f.callchain;
  o.kernel_callchain = !f.no_callchain;
  o.output = f.output;
  o.mmap_pages = f.mmap_pages;
  o.bpf_stats = f.bpf_stats;
  o.cgroup = f.cgroup;
  if (given("-z"))
    o.compression_level = std::clamp(f.compression_level == 0 ? 1 : f.compression_level, 1, 22);
  if (given("--switch-output")) {
    BPFPROF_ASSIGN_OR_RETURN(record::SwitchOutput so, record::parse_switch_output(f.switch_output));
    o.switch_output = so;
  }
  o.switch_max_files = f.switch_max_files;
  o.enricher_sched = f.enricher_sched == "other"  ? perfdata::EnricherSched::kOther
                     : f.enricher_sched == "nice" ? perfdata::EnricherSched::kOtherNice
                                                  : perfdata::EnricherSched::kFifo;
  o.enricher_per_cpu = f.enricher_threads != "one";
  o.enrich = f.enrich == "user" ? record::EnrichMode::kUser : record::EnrichMode::kInKernel;
  o.capture_ring_bytes = f.capture_ring_bytes;
  if (app) o.command = app->remaining();
  if (!o.command.empty() && !f.command.empty()) {
    return make_error(Errc::kInvalidArgument,
                      "two commands: '" + o.command.front() + "' and '" + f.command.front() + "'");
  }
  if (!o.command.empty() && o.command.front().starts_with("-")) {
    // prefix_command() stops at the first unknown token; before the command
    // that can only be a misspelt flag.
    if (given("-z") && o.command.front().find_first_not_of("-0123456789") == std::string::npos) {
      return make_error(Errc::kInvalidArgument,
                        "-z" + o.command.front().substr(1) +
                            ": write --compression-level=" + o.command.front().substr(1));
    }
    return make_error(Errc::kInvalidArgument, "unknown option " + o.command.front());
  }
  if (o.command.empty()) o.command = f.command;
  o.cmdline = argv;
  BPFPROF_TRY(record::validate(o));
  return o;
}

int run_record(const RecordFlags& flags, const std::vector<std::string>& argv) {
  auto options = to_options(flags, argv);
  if (!options.ok()) return fail("record", options.error());
  const bool tty = !flags.quiet && ::isatty(STDERR_FILENO);
  bool progress_shown = false;
  record::RecordSink sink;
  // Notices are told once the recording runs; a failure before that is one
  // line, with them folded in.
  bool started = false;
  std::vector<std::string> held;
  auto tell = [&](std::string_view line) {
    if (progress_shown) std::fputs("\r\x1b[K", stderr);
    std::fprintf(stderr, "bpfprof record: %.*s\n", static_cast<int>(line.size()), line.data());
  };
  sink.notice = [&](std::string_view line) {
    if (flags.quiet) return;
    if (started) {
      tell(line);
    } else {
      held.emplace_back(line);
    }
  };
  sink.started = [&] {
    started = true;
    for (const std::string& line : held) tell(line);
    held.clear();
  };
  if (tty) {
    sink.progress = [&](const record::Progress& p) {
      std::fprintf(stderr, "\r%s\x1b[K", record::format_progress(p).c_str());
      std::fflush(stderr);
      progress_shown = true;
    };
  }
  auto stats = record::record(*options, sink);
  if (progress_shown) std::fputs("\r\x1b[K", stderr);
  if (!stats.ok()) {
    Error e = std::move(stats).error();
    for (const std::string& line : held) e.message += " (note: " + line + ")";
    return fail("record", e);
  }
  if (!flags.quiet) {
    std::fprintf(stderr, "%s\n", record::format_summary(*stats).c_str());
    if (!stats->enrichment.programs.empty()) {
      std::fprintf(stderr, "%s\n", record::format_enrichment(stats->enrichment).c_str());
    }
  }
  return 0;
}

}  // namespace bpfprof::cli
