// SPDX-License-Identifier: Apache-2.0
// The recording's third phase: the drain loop until a stop condition, each
// pass handing what the capture (or the enricher) learned to the file; then
// the events off, the last pass, the capture and the enricher stopped.
#include <utility>

#include "record/phases.h"

namespace bpfprof::record {

// Ring data goes through append_compressed (COMPRESSED records under -z, as
// perf compresses only what it reads from the rings); everything else the
// recorder writes, and FINISHED_ROUND, stays uncompressed, as with perf.
// Each pass: what the capture (or the enricher) learned since the last one
// goes into the data, then the round closes.
Status Recorder::end_pass(bool copied) {
  perfdata::FileWriter& writer = out_->writer();
  std::vector<bpf::ProgInfo> infos;
  std::vector<bpf::BtfBlob> btfs;
  std::vector<perfdata::AttachEntry> links;
  std::vector<std::pair<uint32_t, uint64_t>> loaders;
  if (in_kernel_) {
    in_kernel_->take_learned(infos, btfs);
    in_kernel_->take_attach(links);
    in_kernel_->take_loader_cgroups(loaders);
  }
  enricher_->take_learned(infos, btfs);
  BPFPROF_TRY(hand_to_writer(writer, infos, btfs));
  if (switched_) {
    for (const bpf::ProgInfo& p : infos) handed_.insert(p.id());
    file_.add(infos, btfs);
  }
  perfdata::ProgramMaps bound;
  if (in_kernel_) in_kernel_->take_bound_maps(bound);
  if (!bound.empty()) {
    BPFPROF_TRY(writer.append_in_stream(perfdata::kFeatBpfprofMaps, perfdata::encode_maps(bound)));
  }
  // Their .rodata maps are among the maps captured at load or bound since:
  // decoded from the value the capture copied then, else read by id now.
  BPFPROF_TRY(hand_metadata(perfdata::program_maps(infos)));
  BPFPROF_TRY(hand_metadata(bound));
  bool learned = !links.empty() || !loaders.empty();
  BPFPROF_TRY(sections_->add_attach(std::move(links)));
  BPFPROF_TRY(sections_->add_loaders(std::move(loaders)));
  const uint64_t now = monotonic_ns();
  sections_->saw_loaded(infos, now);
  BPFPROF_ASSIGN_OR_RETURN(const bool tc_found, sections_->relist_tc(now));
  BPFPROF_ASSIGN_OR_RETURN(const bool perf_found, sections_->relist_perf_fds(now));
  learned = learned || tc_found || perf_found;
  if (copied || !infos.empty() || !btfs.empty() || !bound.empty() || learned) {
    return writer.finish_round();
  }
  return ok_status();
}

void Recorder::run() {
  // The file changes with --switch-output: each write finds the current one.
  loop_ = std::make_unique<DrainLoop>(
      events_->events, *layout_,
      [this](Bytes b) {
        file_.ring_bytes += b.size();
        return out_->writer().append_compressed(b);
      },
      [this](bool copied) { return end_pass(copied); });
  if (in_kernel_) {
    PassHooks hooks;
    hooks.before_sideband_copy = [this](perf::RingBuffer& r, std::optional<uint64_t> until) {
      in_kernel_->saw_sideband(r, until);
    };
    hooks.after_pass = [this] { return in_kernel_->after_pass(); };
    hooks.wake_fd = in_kernel_->wake_fd();
    loop_->set_hooks(std::move(hooks));
  }
  DrainConfig dc;
  dc.duration_s = o_.duration_s;
  dc.signal_fd = signals_.fd();
  dc.workload_pidfd = workload_ ? workload_->pidfd() : -1;
  dc.target_pidfd = target_pidfd_.get();
  dc.progress = sink_.progress;
  if (o_.switch_output) {
    const SwitchOutput& so = *o_.switch_output;
    if (so.mode == SwitchOutput::Mode::kTime) dc.switch_interval = std::chrono::seconds(so.seconds);
    dc.switch_on_signal = so.mode == SwitchOutput::Mode::kSignal;
    if (so.mode == SwitchOutput::Mode::kSize) dc.switch_due = [this] { return switch_due(); };
    dc.switch_output = [this] { return switch_output(); };
  }
  t0_ = monotonic_ns();
  stop_ = loop_->run(dc);
  events_->events.disable_all();
  drained_ = stop_.ok() ? loop_->pass() : ok_status();
  t1_ = monotonic_ns();
  if (in_kernel_) in_kernel_->stop();
  enricher_->stop();
  // The final values are read: the statistics go off (they cost every run).
  stats_fd_.reset();
  stats_off_ns_ = o_.bpf_stats ? monotonic_ns() : 0;
}

}  // namespace bpfprof::record
