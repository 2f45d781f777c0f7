// SPDX-License-Identifier: Apache-2.0
// What the host looks like when a recording starts, and the records that
// describe it: the one entry point `record` and `top` share. The snapshot
// is read once (one kallsyms pass, one mountinfo read); the initial state
// is written from it (kernel and module maps, the BPF programs already
// loaded, cgroups, threads), and the programs' holders and attach points
// are listed with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "host/attach_points.h"
#include "host/kernel_maps.h"
#include "host/synthesize.h"
#include "perfdata/owners_feature.h"

namespace bpfprof::host {

struct Snapshot {
  // /proc/kallsyms in one pass (the kernel formats the whole file per read):
  // the kernel map, the [bpf] programs, the text-symbol snapshot. A failed
  // read is kept in kallsyms.text.
  KallsymsScan kallsyms;
  // The cgroup v2 hierarchy (synthesized cgroups, holders' cgroups, cgroup
  // attach points); nullopt where none is mounted.
  std::optional<Cgroup2Mount> cgroup2;
};

// Reads the snapshot now: after the side-band events are on, so a program
// loaded meanwhile is in the stream (see write_initial_state's live_ids).
Snapshot take_snapshot();

struct InitialStateOptions {
  size_t trailer = 0;          // the side-band event's sample_id_all trailer
  bool cgroups = false;        // a CGROUP record per existing cgroup
  // Say what the state lacks (cgroups asked for but no v2 hierarchy, map
  // loads not paired with the JIT code): once per recording, not per file.
  bool say_lacks = true;
  bool finished_init = false;  // end with FINISHED_INIT (a file's preamble)
};

using Notice = std::function<void(std::string_view)>;

// Writes the state before recording, all at time 0, through `write`: the
// kernel and module maps, the BPF programs loaded (but those `live_ids`
// names, whose PROG_LOAD the stream carries), trampolines and dispatchers,
// cgroups, and every thread with its executable maps.
Result<BpfSynthesis> write_initial_state(const Snapshot& snapshot, const InitialStateOptions& options,
                                         const std::function<std::set<uint32_t>()>& live_ids,
                                         const std::function<Status(std::span<const std::byte>)>& write,
                                         const Notice& notice);

// Who holds the programs `synthesized` (those there before us), and where
// every program is attached now (entries with `source` and `time_ns`).
struct ProgramPlaces {
  perfdata::OwnersSection owners;
  AttachScan attach;
};
ProgramPlaces list_program_places(const Snapshot& snapshot, const std::vector<uint32_t>& synthesized,
                                  uint32_t source, uint64_t time_ns);

}  // namespace bpfprof::host
