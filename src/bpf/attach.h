// SPDX-License-Identifier: Apache-2.0
// Where BPF programs are attached, as the kernel lists it now: every BPF link
// (BPF_LINK_GET_NEXT_ID, bpf_link_info), the programs attached to a cgroup
// or an interface without a link (BPF_PROG_QUERY, the XDP netlink query), and
// the names a user writes for those points (`raw_tp/sched_switch`,
// `cgroup_skb/egress`, `tcx/ingress`...). Only the recorder asks (DESIGN rule 1).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"

namespace bpfprof::bpf {

// bpf_link_type values (uapi enum bpf_link_type; the kernel's, not the
// build host's headers, which may be older).
enum LinkType : uint32_t {
  kLinkRawTracepoint = 1,
  kLinkTracing = 2,
  kLinkCgroup = 3,
  kLinkIter = 4,
  kLinkNetns = 5,
  kLinkXdp = 6,
  kLinkPerfEvent = 7,
  kLinkKprobeMulti = 8,
  kLinkStructOps = 9,
  kLinkNetfilter = 10,
  kLinkTcx = 11,
  kLinkUprobeMulti = 12,
  kLinkNetkit = 13,
  kLinkSockmap = 14,
};

// bpf_attach_type values named below by number (uapi enum bpf_attach_type).
inline constexpr uint32_t kAttachTcxIngress = 46;
inline constexpr uint32_t kAttachTcxEgress = 47;
inline constexpr uint32_t kAttachNetkitPrimary = 54;
inline constexpr uint32_t kAttachNetkitPeer = 55;

// bpf_link_info.perf_event.type of a tracepoint (uapi enum bpf_perf_event_type).
inline constexpr uint32_t kPerfEventTracepoint = 5;

// One BPF link, decoded from bpf_link_info (the fields its type uses).
struct LinkInfo {
  uint32_t id = 0;
  uint32_t type = 0;  // LinkType
  uint32_t prog_id = 0;
  uint32_t attach_type = 0;      // tracing, cgroup, netns, tcx, netkit
  uint64_t cgroup_id = 0;        // cgroup
  uint32_t ifindex = 0;          // xdp, tcx, netkit
  uint32_t netns_ino = 0;        // netns
  uint32_t target_obj_id = 0;    // tracing: BTF object (a program for freplace)
  uint32_t target_btf_id = 0;    // tracing: type in that object
  uint32_t map_id = 0;           // struct_ops, sockmap
  uint32_t perf_event_type = 0;  // perf_event: enum bpf_perf_event_type
  uint64_t offset = 0;           // perf_event kprobe/uprobe: offset from `name`
  uint32_t netfilter_pf = 0, netfilter_hook = 0;
  int32_t netfilter_priority = 0;
  // raw_tracepoint and perf_event tracepoint: the tracepoint; kprobe: the
  // function; uprobe and uprobe_multi: the file; iter: the target.
  std::string name;
};

// Every BPF link now. Links that go away while listed are skipped.
Result<std::vector<LinkInfo>> list_links();
// One link by id (the fallback for a link the in-kernel capture missed).
Result<LinkInfo> link_by_id(uint32_t id);

// What BPF_TASK_FD_QUERY says of fd `fd` of process `pid` (a perf event
// with a program set by PERF_EVENT_IOC_SET_BPF or a link over it): the
// program and its point as a perf_event link's LinkInfo (id 0) that
// self_named_point() and link_point() name. `err` is the errno otherwise:
// ENOENT (no program on it, or no such process), EBADF (the fd was
// closed), EOPNOTSUPP (a perf_event program: the kernel does not tell).
struct FdQuery {
  int err = 0;
  LinkInfo link;
};
FdQuery perf_event_fd_query(int pid, int fd);

// Programs attached at a cgroup (an fd of its directory) for `attach_type`,
// with or without a link, not inherited ones. Empty where none (or the kernel
// does not know the type).
std::vector<uint32_t> cgroup_programs(int cgroup_fd, uint32_t attach_type);
// The cgroup attach types the kernel has (cgroup_skb/ingress ... ).
const std::vector<uint32_t>& cgroup_attach_types();

// XDP on an interface of the calling thread's network namespace: the program
// ids per mode (0 = none).
struct XdpPrograms {
  uint32_t driver = 0, generic = 0, offload = 0;
};
XdpPrograms xdp_programs(int ifindex);
// tcx programs at ifindex (kAttachTcxIngress / kAttachTcxEgress).
std::vector<uint32_t> tcx_programs(int ifindex, uint32_t attach_type);

// A BTF type's name in kernel BTF object `obj_id` (vmlinux or a module),
// loaded once per object per process; empty if unknown.
std::string kernel_btf_type_name(uint32_t obj_id, uint32_t type_id);

// Names as a user writes them. `cgroup_attach_name(BPF_CGROUP_INET_EGRESS)`
// is "cgroup_skb/egress"; `tracing_attach_prefix(BPF_TRACE_FENTRY)` is
// "fentry"; unknown numbers come back as "attach_type_N".
std::string cgroup_attach_name(uint32_t attach_type);
std::string tracing_attach_prefix(uint32_t attach_type);
// The point of a link whose naming needs nothing outside `link`: raw_tp,
// perf_event (kprobe/uprobe/tracepoint), iter, struct_ops, netfilter,
// kprobe_multi, uprobe_multi, sockmap. nullopt for the types whose target the
// caller names (cgroup path, interface, network namespace, BTF function).
std::optional<std::string> self_named_point(const LinkInfo& link);

}  // namespace bpfprof::bpf
