// SPDX-License-Identifier: Apache-2.0
// --switch-output, during the run phase: after a pass (every ring drained
// into the current file), the file is closed as the end of a recording
// closes it and renamed with its timestamp; the next one is created and
// given what makes it self-contained before any more ring data: the host,
// a fresh kallsyms snapshot, the threads and maps, every BPF program alive
// (KSYMBOL + BPF_EVENT, info and BTF), who holds them and where they are
// attached. What the rings received meanwhile waits there for the next
// pass: no record is lost or written twice.
#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "perfdata/features.h"
#include "record/phases.h"

namespace bpfprof::record {

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
  const FileCounters counters = loop_->file_counters();
  perfdata::Features features = common_features(counters);
  std::set<uint32_t> stored;
  for (auto& [id, info] : file_.infos) {
    stored.insert(id);
    features.bpf_prog_info.push_back(std::move(info));
  }
  for (auto& [id, btf] : file_.btfs) features.bpf_btf.push_back(std::move(btf));
  EnrichmentStats enrichment = in_kernel_ ? in_kernel_->stats() : EnrichmentStats{};
  enrichment.capture_refused = capture_refused_;
  enrichment.capture_errno = capture_errno_;
  features.enrichment = file_enrichment(std::move(enrichment), stored);
  stored_.insert(stored.begin(), stored.end());
  sections_->move_into(features);
  Status closed = writer.close(features);
  count_compression(writer);
  // Renamed even after a failed close: it is valid up to its last round.
  auto name = switched_->done();
  sections_.reset();
  out_.reset();
  BPFPROF_TRY(std::move(closed));
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
  return ok_status();
}

}  // namespace bpfprof::record
