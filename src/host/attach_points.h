// SPDX-License-Identifier: Apache-2.0
// Where the BPF programs are attached now (bpfprof's feature 254), named as
// a user writes it and resolved at once, so a cgroup or interface that goes
// away later keeps the name it had: every BPF link, the programs attached to
// a cgroup of the cgroup v2 hierarchy without a link (BPF_PROG_QUERY on each
// directory), and XDP, tcx and classic tc (cls_bpf) on the interfaces of
// every network namespace a process is in.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bpf/attach.h"
#include "capture/capture_records.h"
#include "host/synthesize.h"
#include "perfdata/attach_feature.h"

namespace bpfprof::host {

// An interface of some network namespace and what is attached to it.
struct InterfaceAttach {
  std::string netns;  // "" for the recorder's own, else a /run/netns name or "netns:<inode>"
  uint32_t ifindex = 0;
  std::string name;
  bpf::XdpPrograms xdp;
  std::vector<uint32_t> tcx_ingress, tcx_egress, netkit_primary, netkit_peer;
  std::vector<uint32_t> tc_ingress, tc_egress;  // classic tc: cls_bpf filters on clsact
};

// What names the targets of links: cgroup paths by id, the interfaces, the
// network namespaces by inode, tracepoint categories by event name.
struct AttachContext {
  std::map<uint64_t, std::string> cgroup_paths;  // id -> /sys/fs/cgroup/...
  std::vector<InterfaceAttach> interfaces;
  std::map<uint32_t, std::string> netns;         // inode -> label ("" for ours)
  std::map<std::string, std::string> tracepoint_category;  // sched_switch -> sched
};

// The point of one link, named with `ctx`.
std::string link_point(const bpf::LinkInfo& link, const AttachContext& ctx);

// `<name>` for the recorder's own network namespace, else `<name>@<netns>`.
std::string in_netns(const std::string& name, const std::string& netns);

// Everything attached now, named. `source`/`time_ns` go into every entry.
// Programs attached both through a link and as the query lists them get one
// entry (the link's).
struct AttachScan {
  std::vector<perfdata::AttachEntry> entries;
  std::map<uint64_t, std::string> cgroup_paths;  // every cgroup seen: id -> path
  size_t links = 0;             // links listed
  std::optional<Error> failed;  // why links could not be listed (the rest still ran)
  uint64_t perf_fds_lost = 0;       // as PerfFdScan counts them
  uint64_t fd_dirs_unreadable = 0;
};
AttachScan scan_attach_points(const std::optional<Cgroup2Mount>& cgroup2, uint32_t source,
                              uint64_t time_ns);

// The programs attached through a perf event (PERF_EVENT_IOC_SET_BPF, or
// a link over it), what `bpftool perf` lists: every `anon_inode:[perf_event]`
// fd of every process under `proc`, asked with BPF_TASK_FD_QUERY, named as
// link_point() names a perf_event link (`tracepoint/raw_syscalls/sys_enter`,
// `kprobe/do_sys_openat2`, `uprobe//usr/lib/.../libc.so.6+0x9a0b0`), with
// the holding process in pid/comm; one entry per program and point (the
// first holder). An fd gone before its query (the process exited, closed
// it or detached) is counted in `lost`, a /proc/<pid>/fd that cannot be
// read (another user's process without the capability) in `unreadable`.
struct PerfFdScan {
  std::vector<perfdata::AttachEntry> entries;
  uint64_t lost = 0;
  uint64_t unreadable = 0;
};
PerfFdScan scan_perf_event_fds(uint32_t source, uint64_t time_ns, const std::string& proc = "/proc");

// Only the classic tc (cls_bpf) filters of every interface of every network
// namespace a process is in, named as scan_attach_points() names them.
std::vector<perfdata::AttachEntry> scan_tc_filters(uint32_t source, uint64_t time_ns);

// The point of a link (or an attachment without one) the in-kernel capture
// saw made, named as link_point() names a listed one, with `ctx`'s cgroup
// paths and network namespaces; nullopt when the capture did not name it
// (a link type it does not read: to be queried by id).
std::optional<std::string> captured_point(const capture::CapturedLink& link, const AttachContext& ctx);

// Names what the capture saw attached during the recording, at the time it
// is drained: cgroup paths from the start listing's (the hierarchy walked
// again for an id it does not have), network namespaces by inode (ours, the
// names in /run/netns), and links the capture did not name — or could not
// send — queried by id while they still exist.
class CapturedAttachNamer {
 public:
  CapturedAttachNamer(std::optional<Cgroup2Mount> cgroup2, std::map<uint64_t, std::string> cgroup_paths);

  // Appends one entry per link: source kCaptured, or kById for the links
  // queried by id. A link gone before its query is only counted (lost()).
  void name(const std::vector<capture::CapturedLink>& links, const std::vector<uint32_t>& missed_link_ids,
            std::vector<perfdata::AttachEntry>& out);
  uint64_t lost() const { return lost_; }

 private:
  std::optional<perfdata::AttachEntry> query(uint32_t link_id, uint64_t time_ns);
  void know_cgroup(uint64_t id);
  void know_netns(uint32_t ino);

  std::optional<Cgroup2Mount> cgroup2_;
  AttachContext ctx_;
  uint64_t own_netns_ = 0;
  uint64_t lost_ = 0;
};

// A program the recording knows, for program_points().
struct KnownProgram {
  uint32_t id = 0;
  uint32_t type = 0;    // bpf_prog_type
  uint32_t source = 0;  // AttachEntry::Source of its entry
  uint64_t time_ns = 0;
};
inline constexpr uint32_t kProgTypeSyscall = 31;  // BPF_PROG_TYPE_SYSCALL
inline constexpr std::string_view kPointSyscall = "syscall";
inline constexpr std::string_view kPointTestRunOnly = "test_run only";

// Points that are no hook: `syscall` for every program of
// BPF_PROG_TYPE_SYSCALL (only ever run by BPF_PROG_RUN or from another
// program), and `test_run only` for a program run through BPF_PROG_TEST_RUN
// during the recording (`test_runs`: id -> first run) that `listed` names
// no point for. Entries not already in `listed`.
std::vector<perfdata::AttachEntry> program_points(const std::vector<perfdata::AttachEntry>& listed,
                                                  const std::vector<KnownProgram>& programs,
                                                  const std::map<uint32_t, uint64_t>& test_runs);

}  // namespace bpfprof::host
