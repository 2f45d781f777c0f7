// SPDX-License-Identifier: Apache-2.0
// Where the BPF programs are attached now (bpfprof's feature 254), named as
// a user writes it and resolved at once, so a cgroup or interface that goes
// away later keeps the name it had: every BPF link, the programs attached to
// a cgroup of the cgroup v2 hierarchy without a link (BPF_PROG_QUERY on each
// directory), and XDP and tcx on the interfaces of every network namespace a
// process is in.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bpf/attach.h"
#include "perfdata/attach_feature.h"
#include "record/synthesize.h"

namespace bpfprof::record {

// An interface of some network namespace and what is attached to it.
struct InterfaceAttach {
  std::string netns;  // "" for the recorder's own, else a /run/netns name or "netns:<inode>"
  uint32_t ifindex = 0;
  std::string name;
  bpf::XdpPrograms xdp;
  std::vector<uint32_t> tcx_ingress, tcx_egress, netkit_primary, netkit_peer;
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
  size_t links = 0;             // links listed
  std::optional<Error> failed;  // why links could not be listed (the rest still ran)
};
AttachScan scan_attach_points(const std::optional<Cgroup2Mount>& cgroup2, uint32_t source,
                              uint64_t time_ns);

}  // namespace bpfprof::record
