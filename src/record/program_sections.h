// SPDX-License-Identifier: Apache-2.0
// Sections 253 (owners) and 254 (attach points) of one recording, kept as
// the recorder learns them: listed at start, added to as the in-kernel
// capture reports loads, links and attachments, listed again at the end.
// Every piece goes into the data as an in-stream record when it is learned
// (a killed recorder's file keeps it); the whole goes into the feature
// sections at close.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "bpf/prog_info.h"
#include "host/snapshot.h"
#include "host/synthesize.h"
#include "perfdata/attach_feature.h"
#include "perfdata/owners_feature.h"
#include "perfdata/writer.h"
#include "record/capture_enricher.h"
#include "record/enricher.h"
#include "record/recorder.h"

namespace bpfprof::record {

class ProgramSections {
 public:
  // Writes who holds the programs there before us and where every program
  // is attached (`places`, listed at start) into the data. `cgroup2` is the
  // cgroup v2 hierarchy, if mounted; `in_kernel` (may be null) gets the
  // names of the cgroups seen.
  static Result<ProgramSections> start(perfdata::FileWriter& writer, host::ProgramPlaces places,
                                       std::optional<host::Cgroup2Mount> cgroup2,
                                       CaptureEnricher* in_kernel, const RecordSink& sink);

  // What the capture learned in a pass: into the data, and kept. A writer
  // that already failed takes nothing more (its close reports the error).
  Status add_loaders(std::vector<std::pair<uint32_t, uint64_t>> learned);
  Status add_attach(std::vector<perfdata::AttachEntry> learned);

  // Classic tc filters are attached over netlink, which the capture does
  // not see. Programs of the tc types (sched_cls, sched_act) loaded during
  // the recording are remembered (saw_loaded), and while one of them has no
  // point yet — for at most kTcWatchNs after its load — the tc filters are
  // listed again at most every kTcRelistNs (relist_tc, after each pass):
  // a filter that lives longer than that is named even when it is gone by
  // the end. Entries found have source kListed; relist_tc says whether it
  // found any.
  static constexpr uint64_t kTcWatchNs = 5'000'000'000;
  static constexpr uint64_t kTcRelistNs = 250'000'000;
  void saw_loaded(const std::vector<bpf::ProgInfo>& infos, uint64_t now_ns);
  Result<bool> relist_tc(uint64_t now_ns);

  // Programs attached through a perf event by PERF_EVENT_IOC_SET_BPF (the
  // classic way of bcc and older bpftrace) make no link the capture sees:
  // programs of the kprobe and tracepoint types loaded during the recording
  // are watched the same way, and while one has no point the perf-event fds
  // of every process are queried again (host::scan_perf_event_fds, at most
  // every kTcRelistNs, for at most kTcWatchNs after the load). Entries found
  // have source kListed and their holder; a program with a perf_event link
  // is left to the link (captured, or listed at end). relist_perf_fds says
  // whether it found any.
  Result<bool> relist_perf_fds(uint64_t now_ns);

  // After the recording, before its workload is reaped: what the capture
  // still held, and the points attached during the recording and still
  // there (those listed at start are not repeated).
  Status list_at_end();
  // The capture's part of it alone (no listing of the host): what it held,
  // for a file --switch-output closes (the next file lists the host).
  Status take_captured();

  // The programs that name their point without a link (`syscall`,
  // `test_run only`): `at_start` were synthesized, `during` loaded while
  // recording (`programs` has their load times).
  Status name_unlinked(const std::vector<const bpf::ProgInfo*>& at_start,
                       const std::vector<const bpf::ProgInfo*>& during,
                       const std::vector<EnrichedProgram>& programs);

  // Both sections, for the file's close.
  void move_into(perfdata::Features& features);

 private:
  ProgramSections(perfdata::FileWriter& writer, CaptureEnricher* in_kernel)
      : writer_(&writer), in_kernel_(in_kernel) {}

  perfdata::FileWriter* writer_;
  CaptureEnricher* in_kernel_;
  std::optional<host::Cgroup2Mount> cgroup2_;
  perfdata::OwnersSection owners_;
  perfdata::AttachSection attach_;
  std::map<uint32_t, uint64_t> tc_watch_;  // tc-type program id -> when seen loaded
  uint64_t tc_listed_ns_ = 0;
  std::map<uint32_t, uint64_t> perf_watch_;  // kprobe/tracepoint program id -> when seen loaded
  uint64_t perf_listed_ns_ = 0;
};

}  // namespace bpfprof::record
