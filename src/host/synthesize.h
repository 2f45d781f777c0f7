// SPDX-License-Identifier: Apache-2.0
// Synthesis of the state before recording began (perf-data-format.md section
// 11): kernel and module maps, BPF programs already loaded, trampolines and
// dispatchers, and existing threads with their executable mappings. All of it
// carries time 0 and is written before the live data.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "bpf/prog_info.h"
#include "host/kernel_maps.h"
#include "host/synth_records.h"
#include "perf/ring_buffer.h"

namespace bpfprof::host {

// Kernel MMAP ([kernel.kallsyms]_text, pid -1) and one MMAP per module.
Status synthesize_kernel(SynthBuffer& out, const Result<KernelText>& text);

// FORK, COMM per thread and MMAP2 per executable mapping of each thread-group
// leader, from /proc. `flush` is called whenever `out` has grown large.
Status synthesize_threads(SynthBuffer& out, const std::function<Status()>& flush,
                          const std::string& proc = "/proc");

// A path field of /proc/self/mountinfo: space, tab, newline and backslash
// come escaped as \ooo (octal).
std::string unescape_mountinfo(std::string_view field);

// Where the cgroup v2 hierarchy is mounted, from /proc/self/mountinfo text:
// the mount point, and the hierarchy path its root shows ("/" unless the
// mount is of a sub-tree). nullopt when no cgroup2 is mounted.
struct Cgroup2Mount {
  std::string mount_point;
  std::string root = "/";
};
std::optional<Cgroup2Mount> find_cgroup2_mount(std::string_view mountinfo);

// The cgroup id of a directory of the cgroup v2 mount: the kernfs node id,
// which is what PERF_SAMPLE_CGROUP and bpf_link_info carry (name_to_handle_at
// returns it as the handle; on 64-bit kernels it is also the inode number).
std::optional<uint64_t> cgroup_id(const std::string& dir);

// One CGROUP record (id, path from the hierarchy's root, as the kernel names
// it in PERF_RECORD_CGROUP) per cgroup under the mount, parents first.
// Cgroups that vanish during the walk are skipped. Returns how many.
Result<size_t> synthesize_cgroups(SynthBuffer& out, const Cgroup2Mount& mount,
                                  const std::function<Status()>& flush);

// Ids of the programs whose PROG_LOAD sits in a ring's unread bytes (scanned
// without consuming: those programs will appear in the stream with their real
// time, so synthesizing them too would describe them twice).
void collect_prog_load_ids(const perf::RingBuffer::Chunk& chunk, std::set<uint32_t>& ids);
// The same for BPF_EVENTs of `event_type` (perf::kBpfEventProgUnload...).
void collect_bpf_event_ids(const perf::RingBuffer::Chunk& chunk, uint16_t event_type,
                           std::set<uint32_t>& ids);

// A loaded program as synthesis describes it: a KSYMBOL per function, then
// its BPF_EVENT PROG_LOAD.
void synthesize_program(SynthBuffer& out, uint32_t id, const bpf::ProgInfo& p);

// Which enumerated programs to synthesize: all that the live stream does not carry.
struct BpfPlan {
  std::vector<uint32_t> synthesize;
  std::vector<uint32_t> live;  // skipped: a live PROG_LOAD describes them
};
BpfPlan plan_bpf_synthesis(const std::vector<uint32_t>& enumerated, const std::set<uint32_t>& live);

struct BpfSynthesis {
  std::vector<bpf::ProgInfo> infos;  // every program whose info was read
  std::vector<bpf::BtfBlob> btfs;
  std::vector<uint32_t> synthesized;  // programs written as KSYMBOL + BPF_EVENT
  std::vector<uint32_t> live;         // skipped: their PROG_LOAD is in the live stream
  size_t gone = 0;                    // enumerated but unloaded before their info was read
  size_t trampolines = 0;             // bpf_trampoline_* / bpf_dispatcher_* KSYMBOLs
  // Programs with maps whose map loads could not be paired with their JIT
  // image (bpf/map_loads.h): their maps have no kernel address, and annotate
  // shows the raw movabs. Counted on x86-64 hosts only (elsewhere not tried).
  size_t maps_unpaired = 0;
};

// Enumerates loaded programs, reads their info (and BTF), then asks
// `live_ids` which of them have a live PROG_LOAD, and writes KSYMBOL per
// function + BPF_EVENT PROG_LOAD for the rest, then trampolines/dispatchers.
// `kallsyms`: the [bpf] entries of /proc/kallsyms (exact names, trampolines).
Result<BpfSynthesis> synthesize_bpf(SynthBuffer& out,
                                    const std::vector<bpf::KallsymsEntry>& kallsyms,
                                    const std::function<std::set<uint32_t>()>& live_ids);

}  // namespace bpfprof::host
