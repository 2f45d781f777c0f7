// SPDX-License-Identifier: Apache-2.0
// Enrichment while the in-kernel capture serves a recording. The drain loop
// shows it every side-band ring before copying it (the PROG_LOADs, nothing
// consumed) and calls it after each pass: it drains the capture ring then.
// Nothing wakes the recorder for it, and no reference is taken for a
// program the capture reported. A PROG_LOAD the capture did not report —
// a load that did not come through the syscall, or one that did not fit in
// the capture ring (which wakes the recorder at once) — is enriched by id
// as the user-space enricher does, and counted apart.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <unordered_set>
#include <vector>

#include "base/error.h"
#include "bpf/query.h"
#include "capture/capture.h"
#include "host/attach_points.h"
#include "perf/records.h"
#include "perf/ring_buffer.h"
#include "perfdata/attach_feature.h"
#include "perfdata/maps_feature.h"
#include "record/enricher.h"

namespace bpfprof::record {

// How long after its PROG_LOAD a program the capture has not reported is
// enriched by id: its loader may still be between the load's BPF_EVENT and
// the syscall's return, where the capture runs (microseconds, unless the
// loader is preempted there). A load the capture knows it missed is
// enriched at once, without waiting.
inline constexpr uint64_t kCaptureGraceNs = 100'000'000;

class CaptureEnricher {
 public:
  CaptureEnricher(std::unique_ptr<capture::Capture> capture, const perf::SampleLayout& sideband_layout);

  // Before a pass copies `ring`: notes its PROG_LOADs (with `until`, those
  // before the first record past that cut: what the pass copies).
  void saw_sideband(perf::RingBuffer& ring, std::optional<uint64_t> until);
  // After a pass: drains the capture and enriches by id what it did not
  // report in time.
  Status after_pass();
  // Before --switch-output closes a file: every PROG_LOAD the file holds
  // resolved, so that its info goes into that file. A loader may still be
  // between its load's BPF_EVENT and the syscall's return, where the
  // capture reports it: the capture is drained again for up to `wait_ns`,
  // then the rest is enriched by id.
  Status settle(uint64_t wait_ns);
  // After the last pass: detaches the capture, drains it, and enriches by id
  // every load still unreported. Idempotent.
  void stop();
  // Readable when the capture wants a drain now (see capture::Capture::wake_fd).
  int wake_fd() const { return capture_->wake_fd(); }

  // Copies of the infos (and their BTF, each blob once) of the programs
  // resolved since the last call, for the file's in-stream records.
  void take_learned(std::vector<bpf::ProgInfo>& infos, std::vector<bpf::BtfBlob>& btfs);

  // What names the links the capture sees created: the cgroup hierarchy
  // and the cgroups the start listing found (before the first pass).
  void set_attach_context(std::optional<host::Cgroup2Mount> cgroup2,
                          std::map<uint64_t, std::string> cgroup_paths);
  // The links and attachments the capture saw since the last call, named
  // (source kCaptured, or kById where the capture could not name or send one).
  void take_attach(std::vector<perfdata::AttachEntry>& out);
  // Links gone before they could be queried by id.
  uint64_t links_lost() const { return namer_ ? namer_->lost() : 0; }
  // Programs run through BPF_PROG_TEST_RUN during the recording: id -> first run.
  const std::map<uint32_t, uint64_t>& test_runs() const { return capture_->test_runs(); }
  // (program id, cgroup v2 id of its loader) read at the loads since the last call.
  void take_loader_cgroups(std::vector<std::pair<uint32_t, uint64_t>>& out) {
    capture_->take_loader_cgroups(out);
  }
  // Programs captured at load whose maps BPF_PROG_BIND_MAP added to since
  // the last call: their whole lists (section 249 pieces extend a list).
  void take_bound_maps(perfdata::ProgramMaps& out) { capture_->take_bound_maps(out); }

  // The value of .rodata map `map_id` as the capture copied it, or null;
  // and the BTF of id `btf_id` captured (or read by id), or null.
  const capture::CapturedValue* map_value(uint32_t map_id) const {
    return capture_->map_value(map_id);
  }
  const bpf::BtfBlob* btf(uint32_t btf_id) const {
    auto it = capture_->btfs().find(btf_id);
    return it == capture_->btfs().end() ? nullptr : &it->second;
  }

  // After stop(): what was collected.
  const EnrichmentStats& stats() const { return stats_; }
  std::map<uint32_t, bpf::ProgInfo>& infos() { return capture_->infos(); }
  std::map<uint32_t, bpf::BtfBlob>& btfs() { return capture_->btfs(); }

 private:
  void resolve(bool final);
  void enrich_by_id(uint32_t id, uint64_t load_ns);

  std::unique_ptr<capture::Capture> capture_;
  perf::SampleLayout layout_;
  std::map<uint32_t, uint64_t> pending_;  // PROG_LOAD id -> its time, not yet reported
  std::unordered_set<uint32_t> btf_read_;  // BTF ids read by id
  std::vector<uint32_t> learned_;          // programs with an info, not yet taken
  std::unordered_set<uint32_t> btf_taken_;  // BTF ids handed out by take_learned
  bpf::ReadBuffers buffers_;
  std::unique_ptr<host::CapturedAttachNamer> namer_;
  EnrichmentStats stats_;
  bool stopped_ = false;
};

}  // namespace bpfprof::record
