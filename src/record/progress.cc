// SPDX-License-Identifier: Apache-2.0
#include "record/progress.h"

#include <fmt/format.h>

namespace bpfprof::record {

std::string format_progress(const Progress& p) {
  return fmt::format("[ recording: {:.1f} s, {} samples, {} lost, {:.1f} MB ]", p.elapsed_s,
                     p.samples, p.lost, static_cast<double>(p.bytes) / (1024.0 * 1024.0));
}

std::string format_summary(const RecordStats& s) {
  std::string compressed;
  if (s.compressed_out > 0) {
    // As perf record -z says it: what the ring data was and the ratio.
    compressed =
        fmt::format("; ring data {:.3f} MB compressed {:.1f}x",
                    static_cast<double>(s.compressed_in) / (1024.0 * 1024.0),
                    static_cast<double>(s.compressed_in) / static_cast<double>(s.compressed_out));
  }
  // Programs whose bpf_metadata_* variables were not stored: unloaded, their
  // .rodata map gone, before the pass that handed them.
  std::string metadata =
      s.metadata_gone > 0 ? fmt::format(" ({} with metadata gone first)", s.metadata_gone) : "";
  // Variables past the value bytes the capture copied, their map gone too.
  if (s.metadata_cut > 0) {
    metadata += fmt::format(" ({} metadata variables past the captured value)", s.metadata_cut);
  }
  // --switch-output: the samples are those of every file, the size the last one's.
  const std::string files = s.files > 1 ? fmt::format("{} files, the last ", s.files) : "";
  return fmt::format(
      "[ bpfprof record: {} samples, {} lost, {} BPF programs ({} synthesized, {} loaded during "
      "recording), {} enriched{}, {} gone before enrichment; wrote {}{} ({:.3f} MB{}) ]",
      s.samples, s.lost, s.bpf_programs(), s.bpf_synthesized, s.bpf_loaded_live, s.bpf_enriched,
      metadata, s.bpf_gone, files, s.output, static_cast<double>(s.file_bytes) / (1024.0 * 1024.0),
      compressed);
}

std::string format_enrichment(const EnrichmentStats& e) {
  if (e.in_kernel) {
    std::string out = fmt::format(
        "enrichment: in-kernel capture at load, {} programs: {} captured, {} enriched by id, {} "
        "gone first",
        e.programs.size(), e.captured(), e.by_id(), e.gone());
    if (e.capture_lost) out += fmt::format(", capture ring full {} times", e.capture_lost);
    out += e.max_hold_ns() ? fmt::format("; median/max hold time {:.0f}/{:.0f} \u00b5s",
                                         static_cast<double>(e.median_hold_ns()) / 1e3,
                                         static_cast<double>(e.max_hold_ns()) / 1e3)
                           : std::string("; no reference held");
    return out;
  }
  return fmt::format(
      "enrichment: {} programs, {} gone first; {} thread{}{} ({}), median/max hold "
      "time {:.0f}/{:.0f} \u00b5s",
      e.programs.size(), e.gone(), e.threads, e.threads == 1 ? "" : "s",
      e.pinned ? " pinned per CPU" : "", perfdata::sched_name(e.sched),
      static_cast<double>(e.median_hold_ns()) / 1e3, static_cast<double>(e.max_hold_ns()) / 1e3);
}

}  // namespace bpfprof::record
