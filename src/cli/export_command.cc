// SPDX-License-Identifier: Apache-2.0
#include "cli/export_command.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "analysis/aggregate.h"
#include "analysis/recording.h"
#include "analysis/sample_filter.h"
#include "analysis/session.h"
#include "base/diagnostics.h"
#include "base/output_open.h"
#include "cli/progress_meter.h"
#include "export/export.h"
#include "profile/group.h"

namespace bpfprof::cli {
namespace {

Result<std::optional<double>> parse_seconds(std::string_view s, const char* which) {
  if (s.empty()) return std::optional<double>();
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v) || v < 0) {
    return make_error(Errc::kInvalidArgument,
                      fmt::format("--time: {} '{}' is not a number of seconds >= 0", which, s));
  }
  return std::optional<double>(v);
}

uint64_t to_ns(double seconds) { return static_cast<uint64_t>(std::llround(seconds * 1e9)); }

// Samples the export will show: all kept by pass 2, or those with a BPF leaf.
uint64_t shown_samples(const profile::Profile& p, bool bpf_only) {
  uint64_t n = 0;
  for (const auto& [key, counts] : p.samples()) {
    if (!bpf_only || profile::is_bpf_leaf(p.leaf(key.stack))) n += counts.samples;
  }
  return n;
}

}  // namespace

CLI::App* add_export_command(CLI::App& app, ExportFlags& f) {
  CLI::App* cmd = app.add_subcommand(
      "export", "Stacks of a recording as folded lines, a flame graph (SVG, HTML) or a JSON tree");
  cmd->add_option("-i,--input", f.input, "Input file (default perf.data)");
  // Not checked by CLI11: an unsupported format must list the supported ones.
  cmd->add_option("--format", f.format,
                  "Output format: " + exporter::supported_export_formats() + " (default folded)");
  cmd->add_option("-o,--output", f.output, "Output file (default stdout)");
  cmd->add_flag("--bpf-only", f.bpf_only, "Only stacks whose leaf frame is BPF code");
  cmd->add_option("--pid", f.pid, "Only samples of this process")->check(CLI::NonNegativeNumber);
  cmd->add_option("--time", f.time,
                  "Only samples in FROM,TO (seconds from the first sample; either may be empty)");
  cmd->add_option("--title", f.title, "Title of the SVG/HTML flame graph");
  add_read_flags(cmd, f);
  return cmd;
}

Subcommand add_export_subcommand(CLI::App& app) {
  return make_subcommand<ExportFlags>(
      app, add_export_command,
      [](ExportFlags& f, const std::vector<std::string>&, const std::vector<std::string>&) {
        return run_export(f);
      });
}

Result<TimeRange> parse_time_range(std::string_view text) {
  const size_t comma = text.find(',');
  if (comma == std::string_view::npos || text.find(',', comma + 1) != std::string_view::npos) {
    return make_error(Errc::kInvalidArgument,
                      fmt::format("--time '{}': expected FROM,TO in seconds", text));
  }
  TimeRange r;
  BPFPROF_ASSIGN_OR_RETURN(r.from_s, parse_seconds(text.substr(0, comma), "FROM"));
  BPFPROF_ASSIGN_OR_RETURN(r.to_s, parse_seconds(text.substr(comma + 1), "TO"));
  if (r.from_s && r.to_s && *r.from_s > *r.to_s) {
    return make_error(Errc::kInvalidArgument,
                      fmt::format("--time '{}': FROM is after TO", text));
  }
  return r;
}

int run_export(const ExportFlags& f) {
  // Checked before the (possibly long) read of the recording.
  auto writer = exporter::export_writer(f.format);
  if (!writer.ok()) return fail("export", writer.error());
  TimeRange range;
  if (!f.time.empty()) {
    auto parsed = parse_time_range(f.time);
    if (!parsed.ok()) return fail("export", parsed.error());
    range = *parsed;
  }
  const bool timed = range.from_s || range.to_s;  // one more walk: the first sample's time
  ProgressMeter meter(ProgressMeter::for_stderr(f.quiet, timed ? 3 : 2), f.input);
  auto session = analysis::Session::open(
      f.input, session_options(f, meter.progress()));
  if (!session.ok()) {
    meter.stop();
    return fail("export", session.error());
  }

  analysis::AggregateOptions agg;
  agg.stacks = true;
  // pprof's `cgroup` label; recordings without cgroups aggregate as before.
  agg.cgroups = f.format == "pprof" && (*session)->samples_have_cgroups();
  agg.threads = f.jobs;
  std::string filters;
  if (f.pid >= 0) {
    agg.filter.pid = static_cast<uint32_t>(f.pid);
    filters += fmt::format(", pid {}", f.pid);
  }
  if (timed) {
    meter.next_pass();
    auto first = analysis::first_sample_time(**session);
    if (!first.ok()) {
      meter.stop();
      return fail("export", first.error());
    }
    if (range.from_s) agg.filter.from_ns = *first + to_ns(*range.from_s);
    if (range.to_s) agg.filter.to_ns = *first + to_ns(*range.to_s);
    filters += fmt::format(", time {}", f.time);
  }
  meter.next_pass();
  analysis::ReportData data = analysis::aggregate(**session, agg);
  meter.stop();
  analysis::add_bpf_addresses(data, (*session)->symbolizer());  // pprof mappings

  const uint64_t shown = shown_samples(data.profile, f.bpf_only);
  const uint64_t bad = data.profile.diagnostics()[Diag::kSamplesBad];
  if (data.profile.total().samples == 0 && bad > 0) {
    // Nothing was exported because nothing could be read: a failure, as
    // `report` counts it, not an empty result.
    return fail("export", make_error(Errc::kBadRecord,
                                     fmt::format("{}: every sample is damaged ({}={}): "
                                                 "nothing to export",
                                                 f.input, diag_info(Diag::kSamplesBad).name, bad)));
  }
  if (shown == 0) {
    std::fprintf(stderr, "bpfprof export: no samples%s in %s; the output is empty\n",
                 agg.filter.active() || f.bpf_only ? " match the filters" : "", f.input.c_str());
  }
  exporter::ExportOptions o;
  o.bpf_only = f.bpf_only;
  o.title = f.title;
  o.subtitle = fmt::format("{}: {} samples{}{}", f.input, shown, f.bpf_only ? ", BPF leaves only" : "",
                           filters);
  auto bytes = (**writer)(data, o);
  if (!bytes.ok()) return fail("export", bytes.error());
  Status written = write_file(f.output, *bytes);
  if (!written.ok()) return fail("export", written.error());
  const InputDiagnostics read[] = {{f.input, data.profile.diagnostics()}};
  warn_of_losses("export", read, f.quiet);
  return 0;
}

}  // namespace bpfprof::cli
