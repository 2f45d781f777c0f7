// SPDX-License-Identifier: Apache-2.0
// The recording's last phase: what is attached at the end listed, the
// workload reaped, every section assembled and the file closed; then the
// figures of the summary line.
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "perfdata/record_compressor.h"
#include "record/phases.h"
#include "record/run_stats_table.h"

namespace bpfprof::record {

Result<RecordStats> Recorder::finish() {
  // A switch that failed before the next file had its start (a full disk,
  // the directory gone): that file holds no ring data and goes; the files
  // before it are complete.
  if (!out_ || !sections_) {
    if (workload_) workload_->terminate_and_reap();
    if (out_) out_->abandon();
    return stop_.ok() ? make_error(Errc::kIo, "the next output file was not started")
                      : std::move(stop_).error();
  }
  perfdata::FileWriter& writer = out_->writer();
  // Attached during the recording and still there, listed before the
  // workload goes.
  Status listed = sections_->list_at_end();
  std::optional<int> workload_status;
  if (workload_) workload_status = workload_->terminate_and_reap();
  const DrainCounters& c = loop_->counters();
  perfdata::Features features = common_features(loop_->file_counters());
  // What enriched the programs loaded during the recording.
  EnrichmentStats enrichment = in_kernel_ ? in_kernel_->stats() : enricher_->stats();
  enrichment.capture_refused = capture_refused_;
  enrichment.capture_errno = capture_errno_;
  std::map<uint32_t, bpf::ProgInfo> infos =
      std::move(in_kernel_ ? in_kernel_->infos() : enricher_->infos());
  std::map<uint32_t, bpf::BtfBlob> btfs =
      std::move(in_kernel_ ? in_kernel_->btfs() : enricher_->btfs());
  std::vector<bpf::ProgInfo> at_start = std::move(bpf_.infos);
  std::vector<bpf::BtfBlob> btfs_at_start = std::move(bpf_.btfs);
  if (switched_) {
    // The last file: its own programs, and those learned after the last pass.
    std::erase_if(infos, [&](const auto& e) { return handed_.count(e.first) > 0; });
    // Those synthesized at its start apart, as at the start of a recording.
    at_start.clear();
    const std::set<uint32_t> synthesized(file_.synthesized.begin(), file_.synthesized.end());
    for (auto& [id, info] : file_.infos) {
      if (synthesized.count(id)) {
        at_start.push_back(std::move(info));
      } else {
        infos.try_emplace(id, std::move(info));
      }
    }
    // Their BTF, also where a sibling program handed it in an earlier file.
    std::set<uint32_t> btf_ids;
    for (const auto& [id, info] : infos) btf_ids.insert(info.info.btf_id);
    for (const bpf::ProgInfo& info : at_start) btf_ids.insert(info.info.btf_id);
    std::erase_if(btfs, [&](const auto& e) { return btf_ids.count(e.first) == 0; });
    for (auto& [id, btf] : file_.btfs) btfs.try_emplace(id, std::move(btf));
    btfs_at_start.clear();
  }
  // Programs that name their point without a link: `syscall`, `test_run only`.
  std::vector<const bpf::ProgInfo*> start_ptrs, during_ptrs;
  for (const bpf::ProgInfo& p : at_start) start_ptrs.push_back(&p);
  for (const auto& [id, p] : infos) during_ptrs.push_back(&p);
  Status named = sections_->name_unlinked(start_ptrs, during_ptrs, enrichment.programs);
  merge_prog_infos(infos, std::move(at_start));
  merge_btfs(btfs, std::move(btfs_at_start));
  std::set<uint32_t> stored;
  for (auto& [id, info] : infos) {
    stored.insert(id);
    features.bpf_prog_info.push_back(std::move(info));
  }
  features.enrichment = file_enrichment(enrichment, stored);
  stored_.insert(stored.begin(), stored.end());
  sections_->move_into(features);
  if (o_.bpf_stats) add_run_stats(features, run_stats_now(enrichment), stats_off_ns_);
  for (auto& [id, btf] : btfs) features.bpf_btf.push_back(std::move(btf));
  perfdata::attach_metadata(file_.metadata, features.bpf_prog_info);
  Status closed = writer.close(std::move(features));
  count_compression(writer);
  const FileCounters last = loop_->file_counters();
  if (switched_) {
    // The last file is renamed too, as perf does at exit.
    auto name = switched_->done();
    if (!name.ok() && closed.ok()) closed = std::move(name).error();
    if (name.ok()) {
      last_file_ = *name;
      if (sink_.notice) sink_.notice(fmt::format("wrote {}: {} samples", last_file_, last.samples));
    }
  }
  // A write error surfaces in the drain too; close's says what was kept.
  if (!closed.ok()) return std::move(closed).error();
  if (!stop_.ok()) return std::move(stop_).error();
  if (!drained_.ok()) return std::move(drained_).error();
  if (!listed.ok()) return std::move(listed).error();
  if (!named.ok()) return std::move(named).error();
  RecordStats stats = figures(c, std::move(enrichment));
  stats.workload_status = workload_status;
  stats.compressed_in = compressed_in_;
  stats.compressed_out = compressed_out_;
  return stats;
}

perfdata::Features Recorder::common_features(const FileCounters& file) {
  perfdata::Features features = perfdata::host_features();
  features.cmdline = cmdline_with_exe(o_.cmdline);
  features.first_sample_time = file.first_sample_time;
  features.last_sample_time = file.last_sample_time;
  if (!kallsyms_packed_.empty()) {
    features.other[perfdata::kFeatBpfprofKallsyms] = std::move(kallsyms_packed_);
    kallsyms_packed_.clear();
  }
  features.vdso = vdso_image_;  // kept by the recorder until the last close
  return features;
}

perfdata::EnrichmentSection Recorder::file_enrichment(EnrichmentStats enrichment,
                                                      const std::set<uint32_t>& stored) const {
  if (switched_) {
    // Programs loaded while an earlier file was current are that file's.
    std::erase_if(enrichment.programs, [&](const EnrichedProgram& p) {
      return p.load_time_ns < file_.start_ns && !stored.count(p.id);
    });
  }
  return enrichment_section(enrichment, file_.synthesized, stored);
}

void Recorder::count_compression(const perfdata::FileWriter& writer) {
  if (const perfdata::RecordCompressor* z = writer.compressor()) {
    compressed_in_ += z->bytes_in();
    compressed_out_ += z->bytes_out();
  }
}

RunStatsTable Recorder::run_stats_now(const EnrichmentStats& enrichment) const {
  RunStatsTable table;
  // Programs loaded during the recording start at zero at their load; the
  // poller's values follow (with capture, it sees them only at its next poll).
  if (in_kernel_) {
    for (const EnrichedProgram& p : enrichment.programs) {
      if (p.enriched) table.saw(p.id, p.load_time_ns, {}, true);
    }
  }
  table.merge(enricher_->run_stats_so_far());
  return table;
}

void Recorder::add_run_stats(perfdata::Features& features, const RunStatsTable& table,
                             uint64_t end_ns) const {
  perfdata::RunStatsSection rs;
  rs.poll_interval_ns = kRunStatsPollNs;
  rs.enabled_ns = std::max(stats_on_ns_, file_.start_ns);
  rs.disabled_ns = end_ns;
  // A switched file's own runs: from the values read at the switch that
  // started it (none before the first switch: the table as it is).
  rs.programs = table.since(run_stats_at_switch_, file_.start_ns).entries();
  features.run_stats = std::move(rs);
}

RecordStats Recorder::figures(const DrainCounters& c, EnrichmentStats enrichment) const {
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
  // In any file (with --switch-output, the last holds only its own).
  for (uint32_t id : stored_) {
    if (synthesized.count(id) || live.count(id)) stats.bpf_enriched++;
  }
  stats.bpf_gone = bpf_.gone + stats.enrichment.gone();
  stats.metadata_gone = metadata_gone_;
  stats.metadata_cut = metadata_cut_;
  stats.trampolines = bpf_.trampolines;
  stats.stop_reason = *stop_;
  stats.stop_signal = loop_->stop_signal();
  stats.elapsed_s = static_cast<double>(t1_ - t0_) / 1e9;
  stats.output = switched_ ? last_file_ : o_.output;
  stats.files = switched_ ? switched_->renamed() : 1;
  struct stat st {};
  if (::stat(stats.output.c_str(), &st) == 0) stats.file_bytes = static_cast<uint64_t>(st.st_size);
  return stats;
}

}  // namespace bpfprof::record
