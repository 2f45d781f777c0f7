// SPDX-License-Identifier: Apache-2.0
// bpfprof's feature 253: who held the BPF programs that were loaded before
// recording began — the processes with an fd of the program or of a link of
// it, their cgroups, and whether it or a link of it was pinned in a BPF
// filesystem — read from /proc and the bpffs mounts at start; and the cgroup
// of the task that loaded each program loaded during the recording (its
// BPF_EVENT carries the loader's pid/tid, the in-kernel capture its cgroup).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/byte_cursor.h"
#include "base/error.h"

namespace bpfprof::perfdata {

struct ProgramHolder {
  static constexpr uint32_t kProgFd = 1;  // the process holds an fd of the program
  static constexpr uint32_t kLinkFd = 2;  // ... of a link attaching it
  static constexpr uint32_t kPinned = 4;  // pinned (the program or a link); pid 0, no comm
  uint32_t prog_id = 0;
  uint32_t pid = 0;
  uint32_t flags = 0;
  std::string comm;  // at most 15 bytes, as the kernel keeps it
  uint64_t cgroup_id = 0;  // the process's cgroup v2 id at start (0: unknown)
  bool has(uint32_t f) const { return (flags & f) != 0; }
};

// A program loaded during the recording and the cgroup v2 id of the task
// that loaded it, as the in-kernel capture read it at the load.
struct ProgramLoader {
  uint32_t prog_id = 0;
  uint64_t cgroup_id = 0;
};

struct OwnersSection {
  // Every program the recorder looked for holders of (loaded at start),
  // found or not: one without a holder here has no known owner.
  std::vector<uint32_t> scanned;
  std::vector<ProgramHolder> holders;  // by prog_id, then pid
  std::vector<ProgramLoader> loaders;  // in the order they were learned
};

// 253: u32 version (1), u32 entry_size (40), u32 scanned, u32 count,
//      scanned x u32 prog_id (padded to 8),
//      count x {u32 prog_id, u32 pid, u32 flags, u32 0, char comm[16],
//               u64 cgroup_id},
//      then (optional) u32 loaders, u32 loader_entry_size (16),
//      loaders x {u32 prog_id, u32 0, u64 cgroup_id}.
// Older files have 32-byte entries (no cgroup_id) and no loader table;
// older readers skip both (they read entry_size bytes per holder, and
// nothing after the holders).
std::vector<std::byte> encode_owners(const OwnersSection& s);
Result<OwnersSection> decode_owners(Bytes section, uint64_t base_offset);

}  // namespace bpfprof::perfdata
