// SPDX-License-Identifier: Apache-2.0
// The recording's last phase: what is attached at the end listed, the
// workload reaped, every section assembled and the file closed; then the
// figures of the summary line.
#include <sys/stat.h>

#include <map>
#include <set>
#include <utility>

#include "perfdata/record_compressor.h"
#include "record/phases.h"
#include "record/run_stats_table.h"

namespace bpfprof::record {

Result<RecordStats> Recorder::finish() {
  perfdata::FileWriter& writer = out_->writer();
  // Attached during the recording and still there, listed before the
  // workload goes.
  Status listed = sections_->list_at_end();
  std::optional<int> workload_status;
  if (workload_) workload_status = workload_->terminate_and_reap();
  const DrainCounters& c = loop_->counters();
  perfdata::Features features = perfdata::host_features();
  features.cmdline = cmdline_with_exe(o_.cmdline);
  features.first_sample_time = c.first_sample_time;
  features.last_sample_time = c.last_sample_time;
  if (!kallsyms_packed_.empty()) {
    features.other[perfdata::kFeatBpfprofKallsyms] = std::move(kallsyms_packed_);
  }
  features.vdso = vdso_image_;  // kept by the recorder until close
  // What enriched the programs loaded during the recording.
  EnrichmentStats enrichment = in_kernel_ ? in_kernel_->stats() : enricher_->stats();
  enrichment.capture_refused = capture_refused_;
  enrichment.capture_errno = capture_errno_;
  std::map<uint32_t, bpf::ProgInfo> infos =
      std::move(in_kernel_ ? in_kernel_->infos() : enricher_->infos());
  std::map<uint32_t, bpf::BtfBlob> btfs =
      std::move(in_kernel_ ? in_kernel_->btfs() : enricher_->btfs());
  // Programs that name their point without a link: `syscall`, `test_run only`.
  Status named = sections_->name_unlinked(bpf_.infos, infos, enrichment.programs);
  merge_prog_infos(infos, std::move(bpf_.infos));
  merge_btfs(btfs, std::move(bpf_.btfs));
  std::set<uint32_t> stored;
  for (auto& [id, info] : infos) {
    stored.insert(id);
    features.bpf_prog_info.push_back(std::move(info));
  }
  features.enrichment = enrichment_section(enrichment, bpf_.synthesized, stored);
  sections_->move_into(features);
  if (o_.bpf_stats) add_run_stats(features, enrichment);
  for (auto& [id, btf] : btfs) features.bpf_btf.push_back(std::move(btf));
  Status closed = writer.close(features);
  // A write error surfaces in the drain too; close's says what was kept.
  if (!closed.ok()) return std::move(closed).error();
  if (!stop_.ok()) return std::move(stop_).error();
  if (!drained_.ok()) return std::move(drained_).error();
  if (!listed.ok()) return std::move(listed).error();
  if (!named.ok()) return std::move(named).error();
  RecordStats stats = figures(c, features, std::move(enrichment));
  stats.workload_status = workload_status;
  if (const perfdata::RecordCompressor* z = writer.compressor()) {
    stats.compressed_in = z->bytes_in();
    stats.compressed_out = z->bytes_out();
  }
  return stats;
}

void Recorder::add_run_stats(perfdata::Features& features, const EnrichmentStats& enrichment) {
  perfdata::RunStatsSection rs;
  rs.poll_interval_ns = kRunStatsPollNs;
  rs.enabled_ns = stats_on_ns_;
  rs.disabled_ns = stats_off_ns_;
  RunStatsTable table;
  // Programs loaded during the recording start at zero at their load; the
  // poller's values follow (with capture, it sees them only at its next poll).
  if (in_kernel_) {
    for (const EnrichedProgram& p : enrichment.programs) {
      if (p.enriched) table.saw(p.id, p.load_time_ns, {}, true);
    }
  }
  table.merge(enricher_->run_stats());
  rs.programs = table.entries();
  features.run_stats = std::move(rs);
}

RecordStats Recorder::figures(const DrainCounters& c, const perfdata::Features& features,
                              EnrichmentStats enrichment) const {
  RecordStats stats;
  stats.event_name = events_->spec.name;
  stats.samples = c.samples;
  stats.lost = c.lost + c.lost_sideband + c.lost_samples;
  stats.lost_sideband = c.lost_sideband;
  stats.throttles = c.throttles;
  stats.records = c.records;
  stats.first_sample_time = c.first_sample_time;
  stats.last_sample_time = c.last_sample_time;
  stats.enrichment = std::move(enrichment);
  // Programs: those synthesized, plus those whose PROG_LOAD is in the stream.
  std::set<uint32_t> synthesized(bpf_.synthesized.begin(), bpf_.synthesized.end());
  std::set<uint32_t> live(bpf_.live.begin(), bpf_.live.end());
  for (const EnrichedProgram& p : stats.enrichment.programs) {
    if (!synthesized.count(p.id)) live.insert(p.id);
  }
  stats.bpf_synthesized = synthesized.size();
  stats.bpf_loaded_live = live.size();
  for (const bpf::ProgInfo& p : features.bpf_prog_info) {
    if (synthesized.count(p.id()) || live.count(p.id())) stats.bpf_enriched++;
  }
  stats.bpf_gone = bpf_.gone + stats.enrichment.gone();
  stats.trampolines = bpf_.trampolines;
  stats.stop_reason = *stop_;
  stats.stop_signal = loop_->stop_signal();
  stats.elapsed_s = static_cast<double>(t1_ - t0_) / 1e9;
  stats.output = o_.output;
  struct stat st {};
  if (::stat(o_.output.c_str(), &st) == 0) stats.file_bytes = static_cast<uint64_t>(st.st_size);
  return stats;
}

}  // namespace bpfprof::record
