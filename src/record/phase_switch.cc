// SPDX-License-Identifier: Apache-2.0
// --switch-output, during the run phase: after a pass that cut every ring
// at one time (drain_loop.h) and the infos of the programs loaded up to it
// (the capture settled), the file is closed as the end of a recording
// closes it and renamed with its timestamp; the next one is created and
// given what makes it self-contained before any more ring data: the host,
// a fresh kallsyms snapshot, the threads and maps, every BPF program alive
// (KSYMBOL + BPF_EVENT, info and BTF), who holds them and where they are
// attached. What the rings received meanwhile waits there for the next
// pass: no record is lost or written twice, and a program unloaded in
// between is described too, for its samples there.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "bpf/query.h"
#include "host/synth_records.h"
#include "perfdata/features.h"
#include "record/phases.h"

namespace bpfprof::record {
namespace {

// How long a switch waits for the capture to report the loads its file
// holds (their loaders are inside the syscall, microseconds from its
// return unless preempted) before it reads the rest by id.
constexpr uint64_t kSwitchSettleNs = 20'000'000;

}  // namespace

void Recorder::FilePrograms::add(const std::vector<bpf::ProgInfo>& more_infos,
                                 const std::vector<bpf::BtfBlob>& more_btfs) {
  for (const bpf::ProgInfo& p : more_infos) infos.insert_or_assign(p.id(), p);
  for (const bpf::BtfBlob& b : more_btfs) btfs.insert_or_assign(b.id, b);
}

bool Recorder::switch_due() {
  // Only once ring data went in: the file's own start alone never switches.
  return file_.ring_bytes > 0 && out_->writer().data_bytes() >= o_.switch_output->bytes;
}

Status Recorder::switch_output() {
  perfdata::FileWriter& writer = out_->writer();
  if (in_kernel_) {
    // The programs whose load the file holds: their infos into it too.
    BPFPROF_TRY(in_kernel_->settle(kSwitchSettleNs));
    BPFPROF_TRY(end_pass(false));
  }
  const FileCounters counters = loop_->file_counters();
  perfdata::Features features = common_features(counters);
  std::set<uint32_t> stored;
  for (auto& [id, info] : file_.infos) {
    stored.insert(id);
    features.bpf_prog_info.push_back(std::move(info));
  }
  for (auto& [id, btf] : file_.btfs) features.bpf_btf.push_back(std::move(btf));
  EnrichmentStats enrichment = in_kernel_ ? in_kernel_->stats() : enricher_->stats_so_far();
  enrichment.capture_refused = capture_refused_;
  enrichment.capture_errno = capture_errno_;
  // Where the file's programs are attached: the links and attachments the
  // capture saw while it was current (the host is listed again at the next
  // file's start, not here: the switch stays short), and the programs that
  // name their point without a link, as the last file's close does.
  Status listed = sections_->take_captured();
  // The file's programs (in features now): synthesized at its start, or loaded since.
  std::vector<const bpf::ProgInfo*> at_start, during;
  const std::set<uint32_t> synthesized(file_.synthesized.begin(), file_.synthesized.end());
  for (const bpf::ProgInfo& p : features.bpf_prog_info) {
    (synthesized.count(p.id()) ? at_start : during).push_back(&p);
  }
  Status named = sections_->name_unlinked(at_start, during, enrichment.programs);
  if (o_.bpf_stats) {
    // The live programs' values at the switch end this file's runs and
    // start the next one's.
    RunStatsTable table = run_stats_now(enrichment);
    RunStatsTable polled;
    polled.poll(true);
    table.merge(polled);
    add_run_stats(features, table, monotonic_ns());
    run_stats_at_switch_ = std::move(table);
  }
  features.enrichment = file_enrichment(std::move(enrichment), stored);
  stored_.insert(stored.begin(), stored.end());
  sections_->move_into(features);
  perfdata::attach_metadata(file_.metadata, features.bpf_prog_info);
  // A copy: the programs that die at the cut are looked up in it after.
  Status closed = writer.close(features);
  count_compression(writer);
  // Renamed even after a failed close: it is valid up to its last round.
  auto name = switched_->done();
  sections_.reset();
  out_.reset();
  BPFPROF_TRY(std::move(closed));
  BPFPROF_TRY(std::move(listed));
  BPFPROF_TRY(std::move(named));
  BPFPROF_ASSIGN_OR_RETURN(last_file_, std::move(name));
  if (sink_.notice) sink_.notice(fmt::format("wrote {}: {} samples", last_file_, counters.samples));

  loop_->start_file();
  file_ = FilePrograms{};
  file_.start_ns = monotonic_ns();
  BPFPROF_TRY(create_file(false));
  host::Snapshot snapshot = host::take_snapshot();
  BPFPROF_ASSIGN_OR_RETURN(host::BpfSynthesis synthesis, write_file_start(snapshot));
  file_.synthesized = std::move(synthesis.synthesized);
  file_.add(synthesis.infos, synthesis.btfs);
  return write_dying_programs(features);
}

// A program unloaded after the last file's cut and before the listing
// above is not listed, yet its last samples, and its unload, wait in the
// rings for this file: it is described here as the listing would have,
// from its info — the last file's, or one the user-space enricher learned
// since that file's last pass, which is taken now into this file (the
// capture's were settled into the last file: it has nothing pending).
Status Recorder::write_dying_programs(const perfdata::Features& last_file) {
  perfdata::FileWriter& writer = out_->writer();
  std::vector<bpf::ProgInfo> learned;
  std::vector<bpf::BtfBlob> learned_btfs;
  enricher_->take_learned(learned, learned_btfs);
  BPFPROF_TRY(hand_to_writer(writer, learned, learned_btfs));
  BPFPROF_TRY(hand_metadata(perfdata::program_maps(learned)));
  for (const bpf::ProgInfo& p : learned) handed_.insert(p.id());
  file_.add(learned, learned_btfs);

  std::set<uint32_t> unloads, loads;
  for (CpuRing& r : events_->events.sideband_rings()) {
    host::collect_bpf_event_ids(r.ring.peek(), perf::kBpfEventProgUnload, unloads);
    host::collect_prog_load_ids(r.ring.peek(), loads);
  }
  std::set<uint32_t> described(file_.synthesized.begin(), file_.synthesized.end());
  host::SynthBuffer out(layout_->id_hdr_size());
  std::vector<bpf::ProgInfo> dying;
  std::vector<bpf::BtfBlob> btfs;
  auto describe = [&](const bpf::ProgInfo& p, const std::vector<bpf::BtfBlob>& its_btfs) {
    if (!unloads.count(p.id()) || loads.count(p.id()) || !described.insert(p.id()).second) return;
    // What the capture reads at load carries no names: the kernel's rule
    // gives them (bpf/kallsyms.cc), from the program's BTF.
    bpf::ProgInfo named = p;
    if (named.ksym_names.size() < named.jited_ksyms.size()) {
      const bpf::BtfBlob* btf = nullptr;
      for (const bpf::BtfBlob& b : its_btfs) {
        if (b.id == p.info.btf_id) btf = &b;
      }
      if (auto it = file_.btfs.find(p.info.btf_id); !btf && it != file_.btfs.end()) {
        btf = &it->second;
      }
      bpf::resolve_ksym_names(named, {}, btf);
    }
    host::synthesize_program(out, p.id(), named);
    file_.synthesized.push_back(p.id());
    if (file_.infos.count(p.id())) return;  // learned just now: in the data already
    dying.push_back(p);
    for (const bpf::BtfBlob& b : its_btfs) {
      if (b.id == p.info.btf_id && !file_.btfs.count(b.id)) btfs.push_back(b);
    }
  };
  for (const bpf::ProgInfo& p : learned) describe(p, learned_btfs);
  for (const bpf::ProgInfo& p : last_file.bpf_prog_info) describe(p, last_file.bpf_btf);
  if (!learned.empty() && out.records() == 0) return writer.finish_round();
  if (out.records() == 0) return ok_status();
  BPFPROF_TRY(writer.append(out.bytes()));
  BPFPROF_TRY(hand_to_writer(writer, dying, btfs));
  BPFPROF_TRY(hand_metadata(perfdata::program_maps(dying)));  // read while they lived
  file_.add(dying, btfs);
  return writer.finish_round();
}

}  // namespace bpfprof::record
