// SPDX-License-Identifier: Apache-2.0
// bpfprof's feature 254: where the BPF programs were attached, as a user
// writes it (`tracepoint/sched/sched_switch`, `xdp/eth0`,
// `cgroup_skb/egress:/sys/fs/cgroup/a`), every name resolved when recorded:
// the links and attachments listed at start and at end, and the links the
// in-kernel capture saw created in between. A program attached several
// times has an entry per point (and per time it was seen).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/byte_cursor.h"
#include "base/error.h"

namespace bpfprof::perfdata {

struct AttachEntry {
  // How the recorder learned it.
  enum Source : uint32_t {
    kAtStart = 1,   // listed when the recording began
    kAtEnd = 2,     // listed when it ended
    kCaptured = 3,  // the in-kernel capture at the link's creation
    kById = 4,      // a link created during the recording, queried by its id
    kListed = 5,    // listed during the recording (classic tc filters,
                    // perf-event fds of programs without a point yet)
  };
  uint32_t prog_id = 0;
  uint32_t link_id = 0;  // 0: attached without a link (BPF_PROG_ATTACH, netlink XDP)
  uint32_t source = 0;
  uint64_t time_ns = 0;  // when learned (CLOCK_MONOTONIC; 0 at start)
  std::string point;
  // The process holding the perf event the program is attached to
  // (BPF_TASK_FD_QUERY on its fd named the point); 0 and "" otherwise.
  uint32_t pid = 0;
  std::string comm;
  bool operator==(const AttachEntry&) const = default;
};

struct AttachSection {
  std::vector<AttachEntry> entries;
  // Links created during the recording whose point is unknown: the capture
  // did not name them (a type it does not read, or a record its ring could
  // not take) and they were gone before their query by id.
  uint64_t links_lost = 0;
  // Perf-event fds listed in /proc/<pid>/fd that were gone (process exited,
  // fd closed or detached) before BPF_TASK_FD_QUERY, and /proc/<pid>/fd
  // directories that could not be read: counted, their points unknown.
  uint64_t perf_fds_lost = 0;
  uint64_t fd_dirs_unreadable = 0;
};

// 254: u32 version (1), u32 count, then per entry
//      {u32 prog_id, u32 link_id, u32 source, u32 point_len, u64 time_ns,
//       char point[point_len]} with point_len a multiple of 8 (NUL padded),
//      then u64 links_lost (absent in older files: 0; older readers stop
//      before it), then u64 perf_fds_lost, u64 fd_dirs_unreadable, u32
//      count, u32 0, and per entry named through a perf-event fd
//      {u32 entry index, u32 pid, char comm[16]} (absent in older files;
//      older readers stop before it).
// In-stream, the section comes in several blobs (start, each round that
// learned links, end): a reader concatenates their entries, and takes the
// largest links_lost, perf_fds_lost and fd_dirs_unreadable (each blob
// carries the counts so far).
std::vector<std::byte> encode_attach(const AttachSection& s);
Result<AttachSection> decode_attach(Bytes section, uint64_t base_offset);

}  // namespace bpfprof::perfdata
