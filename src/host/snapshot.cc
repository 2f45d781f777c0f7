// SPDX-License-Identifier: Apache-2.0
#include "host/snapshot.h"

#include <string>
#include <utility>

#include "base/text_file.h"
#include "host/owners.h"
#include "perf/abi.h"

namespace bpfprof::host {

Snapshot take_snapshot() {
  Snapshot s;
  auto kallsyms = read_kallsyms();
  s.kallsyms = kallsyms.ok() ? std::move(kallsyms).value() : KallsymsScan{kallsyms.error(), {}, {}};
  if (auto mountinfo = read_text_file("/proc/self/mountinfo"); mountinfo.ok()) {
    s.cgroup2 = find_cgroup2_mount(*mountinfo);
  }
  return s;
}

Result<BpfSynthesis> write_initial_state(const Snapshot& snapshot, const InitialStateOptions& o,
                                         const std::function<std::set<uint32_t>()>& live_ids,
                                         const std::function<Status(std::span<const std::byte>)>& write,
                                         const Notice& notice) {
  SynthBuffer synth(o.trailer);
  auto flush = [&]() -> Status {
    BPFPROF_TRY(write(synth.bytes()));
    synth.clear();
    return ok_status();
  };
  if (auto s = synthesize_kernel(synth, snapshot.kallsyms.text); !s.ok() && notice) {
    notice("no kernel map: " + s.error().to_string());
  }
  BPFPROF_ASSIGN_OR_RETURN(BpfSynthesis bpf, synthesize_bpf(synth, snapshot.kallsyms.bpf, live_ids));
  BPFPROF_TRY(flush());
  if (bpf.maps_unpaired > 0 && notice && o.say_lacks) {
    notice(std::to_string(bpf.maps_unpaired) + (bpf.maps_unpaired == 1 ? " program" : " programs") +
           " loaded before recording: map loads not paired with the JIT code (annotate shows "
           "their raw addresses)");
  }
  if (o.cgroups) {
    // Cgroups created from here on come as CGROUP records of the side-band
    // event; one created during this walk may be described twice (same id
    // and path).
    if (!snapshot.cgroup2) {
      if (notice && o.say_lacks) {
        notice("--cgroup: no cgroup v2 hierarchy mounted: cgroups are unnamed");
      }
    } else {
      BPFPROF_TRY(synthesize_cgroups(synth, *snapshot.cgroup2, flush));
      BPFPROF_TRY(flush());
    }
  }
  BPFPROF_TRY(synthesize_threads(synth, flush));
  if (o.finished_init) synth.header_only(perf::kRecordFinishedInit);
  BPFPROF_TRY(flush());
  return bpf;
}

ProgramPlaces list_program_places(const Snapshot& snapshot, const std::vector<uint32_t>& synthesized,
                                  uint32_t source, uint64_t time_ns) {
  ProgramPlaces p;
  // Who holds the programs that were there before us, and in which cgroups
  // (those loaded from now on name their loader in their BPF_EVENT, the
  // capture its cgroup).
  p.owners = scan_program_owners(synthesized, snapshot.cgroup2);
  // Where every program is attached (links, cgroups, interfaces), named now.
  p.attach = scan_attach_points(snapshot.cgroup2, source, time_ns);
  return p;
}

}  // namespace bpfprof::host
