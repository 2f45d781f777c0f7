// SPDX-License-Identifier: Apache-2.0
#include "record/capture_enricher.h"

#include <time.h>

#include <algorithm>

#include "record/ring_copier.h"

namespace bpfprof::record {

CaptureEnricher::CaptureEnricher(std::unique_ptr<capture::Capture> capture,
                                 const perf::SampleLayout& sideband_layout)
    : capture_(std::move(capture)), layout_(sideband_layout) {
  stats_.in_kernel = true;
  stats_.capture_errno = 0;
}

void CaptureEnricher::saw_sideband(perf::RingBuffer& ring, std::optional<uint64_t> until) {
  bool past = false;  // the copy stops at the first record past the cut: so does this
  (void)ring.peek_each_record([&](const perf::RecordView& rec) {
    past = past || (until && past_cut(layout_, rec, *until));
    if (past || rec.header.type != perf::kRecordBpfEvent) return;
    auto ev = perf::BpfEvent::parse(rec, layout_);
    if (!ev.ok() || ev->type != perf::kBpfEventProgLoad) return;
    pending_.emplace(ev->id, ev->sample_id.time);
  });
}

Status CaptureEnricher::after_pass() {
  BPFPROF_TRY(capture_->consume());
  resolve(false);
  return ok_status();
}

Status CaptureEnricher::settle(uint64_t wait_ns) {
  const uint64_t deadline = monotonic_ns() + wait_ns;
  for (;;) {
    BPFPROF_TRY(after_pass());
    if (pending_.empty() || monotonic_ns() >= deadline) break;
    // The capture wakes its reader only when its ring fills: poll it.
    const timespec tick{0, 200'000};
    ::nanosleep(&tick, nullptr);
  }
  resolve(true);
  return ok_status();
}

void CaptureEnricher::resolve(bool final) {
  const uint64_t now = monotonic_ns();
  for (auto it = pending_.begin(); it != pending_.end();) {
    const auto [id, load_ns] = *it;
    if (capture_->captured(id)) {
      EnrichedProgram p;
      p.id = id;
      p.load_time_ns = load_ns;
      p.captured = true;
      p.enriched = true;
      stats_.programs.push_back(p);
      learned_.push_back(id);
    } else if (final || capture_->incomplete().count(id) || now >= load_ns + kCaptureGraceNs) {
      enrich_by_id(id, load_ns);
    } else {
      ++it;
      continue;
    }
    it = pending_.erase(it);
  }
}

void CaptureEnricher::enrich_by_id(uint32_t id, uint64_t load_ns) {
  EnrichedProgram p;
  p.id = id;
  p.load_time_ns = load_ns;
  p.by_id = true;
  p.acquired_ns = monotonic_ns();
  auto fd = bpf::prog_fd_by_id(id);
  if (!fd.ok()) {
    p.gone = fd.error().code == Errc::kNotFound;
    if (!p.gone) stats_.errors++;
    stats_.programs.push_back(p);
    return;
  }
  auto info = bpf::read_prog_info(fd->get(), buffers_);
  const uint32_t btf_id = info.ok() ? info->info.btf_id : 0;
  if (btf_id && !capture_->btfs().count(btf_id) && btf_read_.insert(btf_id).second) {
    if (auto btf = bpf::read_btf(btf_id, buffers_); btf.ok()) {
      capture_->btfs().emplace(btf_id, std::move(btf).value());
    }
  }
  fd->reset();
  p.released_ns = monotonic_ns();
  if (info.ok()) {
    p.enriched = true;
    capture_->infos().emplace(id, std::move(info).value());
    learned_.push_back(id);
  } else {
    stats_.errors++;
  }
  stats_.programs.push_back(p);
}

void CaptureEnricher::take_learned(std::vector<bpf::ProgInfo>& infos,
                                   std::vector<bpf::BtfBlob>& btfs) {
  for (uint32_t id : learned_) {
    auto info = capture_->infos().find(id);
    if (info == capture_->infos().end()) continue;
    infos.push_back(info->second);
    const uint32_t btf_id = info->second.info.btf_id;
    if (!btf_id || btf_taken_.count(btf_id)) continue;
    if (auto btf = capture_->btfs().find(btf_id); btf != capture_->btfs().end()) {
      btf_taken_.insert(btf_id);
      btfs.push_back(btf->second);
    }
  }
  learned_.clear();
}

void CaptureEnricher::set_attach_context(std::optional<host::Cgroup2Mount> cgroup2,
                                         std::map<uint64_t, std::string> cgroup_paths) {
  namer_ = std::make_unique<host::CapturedAttachNamer>(std::move(cgroup2), std::move(cgroup_paths));
}

void CaptureEnricher::take_attach(std::vector<perfdata::AttachEntry>& out) {
  std::vector<capture::CapturedLink> links;
  std::vector<uint32_t> missed;
  capture_->take_links(links, missed);
  if (links.empty() && missed.empty()) return;
  if (!namer_) set_attach_context(std::nullopt, {});
  namer_->name(links, missed, out);
}

void CaptureEnricher::stop() {
  if (stopped_) return;
  stopped_ = true;
  capture_->stop();
  resolve(true);
  const capture::CaptureCounters c = capture_->counters();
  stats_.capture_lost = c.lost_records;
  stats_.errors += capture_->bad_records() + c.read_errors;
  std::sort(stats_.programs.begin(), stats_.programs.end(),
            [](const auto& a, const auto& b) { return a.load_time_ns < b.load_time_ns; });
}

}  // namespace bpfprof::record
