// SPDX-License-Identifier: Apache-2.0
// What the three parts of the attach-point naming share (internal to host/):
// the listing at a moment (attach_points.cc), the perf-event fds
// (perf_event_fds.cc) and what the capture saw attached (captured_attach.cc).
#pragma once

#include <dirent.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "host/attach_points.h"

namespace bpfprof::host::detail {

std::unique_ptr<DIR, int (*)(DIR*)> open_dir(const std::string& path);

std::optional<uint64_t> inode_of(const std::string& path);

// A network namespace some process is in, and how to enter it.
struct Netns {
  std::string path;   // an nsfs file of it ("" for our own)
  std::string label;  // "" for ours
};

// Every network namespace: ours, the named ones (/run/netns), and every
// process's; by inode.
std::map<uint64_t, Netns> network_namespaces();

// The interfaces of every namespace; another namespace is entered by a
// short-lived thread (setns changes only the calling thread's). With
// `tc_only` only their classic tc filters are asked for.
std::vector<InterfaceAttach> all_interfaces(const std::map<uint64_t, Netns>& namespaces,
                                            bool tc_only = false);

// The cgroup directories under `dir` (its own first): id -> path, and, with
// `out`, the programs attached at each without inheritance.
void walk_cgroups(const std::string& dir, AttachContext& ctx, std::vector<perfdata::AttachEntry>* out,
                  int depth = 0);

// Categories of the tracepoints perf_event links name (the kernel gives the
// event name only): `syscalls` for sys_enter_* / sys_exit_*, else the
// tracefs directory that has the event.
void find_categories(const std::vector<bpf::LinkInfo>& links, AttachContext& ctx);

}  // namespace bpfprof::host::detail
