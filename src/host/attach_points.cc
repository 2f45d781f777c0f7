// SPDX-License-Identifier: Apache-2.0
#include "host/attach_points.h"

#include <dirent.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "base/unique_fd.h"
#include "bpf/tc.h"
#include "host/attach_internal.h"
#include "perf/tracefs.h"

namespace bpfprof::host {
namespace {

using detail::all_interfaces;
using detail::find_categories;
using detail::inode_of;
using detail::Netns;
using detail::network_namespaces;
using detail::open_dir;
using detail::walk_cgroups;
using perfdata::AttachEntry;

constexpr uint32_t kAttachFlowDissector = 17;
constexpr uint32_t kAttachSkLookup = 36;

std::vector<std::string> subdirectories(const std::string& dir) {
  std::vector<std::string> out;
  auto d = open_dir(dir);
  while (dirent* e = d ? ::readdir(d.get()) : nullptr) {
    if (e->d_type == DT_DIR && std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
      out.emplace_back(e->d_name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The interfaces of the calling thread's network namespace; with `tc_only`
// only their classic tc filters are asked for.
std::vector<InterfaceAttach> interfaces_here(const std::string& label, bool tc_only) {
  std::vector<InterfaceAttach> out;
  std::unique_ptr<struct if_nameindex, void (*)(struct if_nameindex*)> list(::if_nameindex(),
                                                                         &::if_freenameindex);
  for (const struct if_nameindex* i = list.get(); i && i->if_index != 0; i++) {
    InterfaceAttach a;
    a.netns = label;
    a.ifindex = i->if_index;
    a.name = i->if_name;
    const int idx = static_cast<int>(i->if_index);
    if (!tc_only) {
      a.xdp = bpf::xdp_programs(idx);
      a.tcx_ingress = bpf::tcx_programs(idx, bpf::kAttachTcxIngress);
      a.tcx_egress = bpf::tcx_programs(idx, bpf::kAttachTcxEgress);
      a.netkit_primary = bpf::tcx_programs(idx, bpf::kAttachNetkitPrimary);
      a.netkit_peer = bpf::tcx_programs(idx, bpf::kAttachNetkitPeer);
    }
    // An interface netlink cannot list (gone meanwhile) has no tc filters.
    if (auto tc = bpf::tc_programs(idx, bpf::TcDirection::kIngress); tc.ok()) a.tc_ingress = std::move(*tc);
    if (auto tc = bpf::tc_programs(idx, bpf::TcDirection::kEgress); tc.ok()) a.tc_egress = std::move(*tc);
    out.push_back(std::move(a));
  }
  return out;
}

// The points of interface `i`'s programs in `progs`: `<kind>/<ifname>`.
void add_interface_points(const InterfaceAttach& i, const std::vector<uint32_t>& progs,
                          const char* kind, std::vector<AttachEntry>& out) {
  for (uint32_t p : progs) {
    out.push_back(AttachEntry{p, 0, 0, 0, in_netns(fmt::format("{}/{}", kind, i.name), i.netns)});
  }
}

bool contains(const std::vector<uint32_t>& v, uint32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string xdp_point(const InterfaceAttach& i, uint32_t prog) {
  const char* kind = prog == i.xdp.generic ? "xdp_generic" : prog == i.xdp.offload ? "xdp_offload" : "xdp";
  return in_netns(fmt::format("{}/{}", kind, i.name), i.netns);
}

// Where a link on interface `ifindex` is: the interface of that index that
// lists the program, else ours of that index.
const InterfaceAttach* interface_of(const bpf::LinkInfo& l, const AttachContext& ctx) {
  const InterfaceAttach* ours = nullptr;
  for (const InterfaceAttach& i : ctx.interfaces) {
    if (i.ifindex != l.ifindex) continue;
    const uint32_t p = l.prog_id;
    if (i.xdp.driver == p || i.xdp.generic == p || i.xdp.offload == p || contains(i.tcx_ingress, p) ||
        contains(i.tcx_egress, p) || contains(i.netkit_primary, p) || contains(i.netkit_peer, p)) {
      return &i;
    }
    if (i.netns.empty()) ours = &i;
  }
  return ours;
}

}  // namespace

namespace detail {

std::unique_ptr<DIR, int (*)(DIR*)> open_dir(const std::string& path) {
  return {::opendir(path.c_str()), &::closedir};
}

std::optional<uint64_t> inode_of(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return static_cast<uint64_t>(st.st_ino);
}

std::map<uint64_t, Netns> network_namespaces() {
  std::map<uint64_t, Netns> out;
  const auto self = inode_of("/proc/self/ns/net");
  if (self) out[*self] = Netns{"", ""};
  auto run = open_dir("/run/netns");  // ip netns add <name>
  while (dirent* e = run ? ::readdir(run.get()) : nullptr) {
    if (e->d_name[0] == '.') continue;
    const std::string path = std::string("/run/netns/") + e->d_name;
    if (auto ino = inode_of(path); ino && !out.count(*ino)) out[*ino] = Netns{path, e->d_name};
  }
  auto proc = open_dir("/proc");
  while (dirent* e = proc ? ::readdir(proc.get()) : nullptr) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    const std::string path = std::string("/proc/") + e->d_name + "/ns/net";
    auto ino = inode_of(path);
    if (ino && !out.count(*ino)) out[*ino] = Netns{path, fmt::format("netns:{}", *ino)};
  }
  return out;
}

std::vector<InterfaceAttach> all_interfaces(const std::map<uint64_t, Netns>& namespaces,
                                            bool tc_only) {
  std::vector<InterfaceAttach> out;
  for (const auto& [ino, ns] : namespaces) {
    std::vector<InterfaceAttach> found;
    if (ns.path.empty()) {
      found = interfaces_here(ns.label, tc_only);
    } else {
      std::thread t([&] {
        UniqueFd fd(::open(ns.path.c_str(), O_RDONLY | O_CLOEXEC));
        if (fd.valid() && ::setns(fd.get(), CLONE_NEWNET) == 0) {
          found = interfaces_here(ns.label, tc_only);
        }
      });
      t.join();
    }
    for (InterfaceAttach& a : found) out.push_back(std::move(a));
  }
  return out;
}

void walk_cgroups(const std::string& dir, AttachContext& ctx, std::vector<AttachEntry>* out,
                  int depth) {
  if (depth > 64) return;
  const auto id = cgroup_id(dir);
  if (!id) return;  // removed meanwhile
  ctx.cgroup_paths[*id] = dir;
  UniqueFd fd(out ? ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1);
  if (fd.valid()) {
    for (uint32_t type : bpf::cgroup_attach_types()) {
      for (uint32_t prog : bpf::cgroup_programs(fd.get(), type)) {
        AttachEntry e;
        e.prog_id = prog;
        e.point = bpf::cgroup_attach_name(type) + ":" + dir;
        out->push_back(std::move(e));
      }
    }
  }
  for (const std::string& c : subdirectories(dir)) walk_cgroups(dir + "/" + c, ctx, out, depth + 1);
}

void find_categories(const std::vector<bpf::LinkInfo>& links, AttachContext& ctx) {
  std::set<std::string> wanted;
  for (const bpf::LinkInfo& l : links) {
    if (l.type != bpf::kLinkPerfEvent || self_named_point(l) || l.name.empty()) continue;
    if (l.name.starts_with("sys_enter_") || l.name.starts_with("sys_exit_")) {
      ctx.tracepoint_category[l.name] = "syscalls";
    } else {
      wanted.insert(l.name);
    }
  }
  if (wanted.empty()) return;
  (void)perf::with_tracefs([&](const std::string& tracefs) {
    for (const std::string& category : subdirectories(tracefs + "/events")) {
      for (const std::string& name : wanted) {
        struct stat st{};
        const std::string dir = tracefs + "/events/" + category + "/" + name;
        if (::stat(dir.c_str(), &st) == 0) ctx.tracepoint_category.emplace(name, category);
      }
    }
  });
}

}  // namespace detail

std::string in_netns(const std::string& name, const std::string& netns) {
  return netns.empty() ? name : name + "@" + netns;
}

std::string link_point(const bpf::LinkInfo& l, const AttachContext& ctx) {
  if (auto p = bpf::self_named_point(l)) return *p;
  switch (l.type) {
    case bpf::kLinkPerfEvent: {  // a tracepoint
      auto c = ctx.tracepoint_category.find(l.name);
      return c == ctx.tracepoint_category.end() ? "tracepoint/" + l.name
                                                : "tracepoint/" + c->second + "/" + l.name;
    }
    case bpf::kLinkTracing: {
      const std::string prefix = bpf::tracing_attach_prefix(l.attach_type);
      if (prefix == "freplace") return fmt::format("freplace/prog {}", l.target_obj_id);
      std::string fn = bpf::kernel_btf_type_name(l.target_obj_id, l.target_btf_id);
      if (fn.empty()) fn = fmt::format("btf {}:{}", l.target_obj_id, l.target_btf_id);
      return prefix + "/" + fn;
    }
    case bpf::kLinkCgroup: {
      auto path = ctx.cgroup_paths.find(l.cgroup_id);
      return bpf::cgroup_attach_name(l.attach_type) + ":" +
             (path == ctx.cgroup_paths.end() ? fmt::format("cgroup id {}", l.cgroup_id) : path->second);
    }
    case bpf::kLinkNetns: {
      const std::string kind = l.attach_type == kAttachFlowDissector ? "flow_dissector"
                               : l.attach_type == kAttachSkLookup    ? "sk_lookup"
                                                   : fmt::format("attach_type_{}", l.attach_type);
      auto ns = ctx.netns.find(l.netns_ino);
      return in_netns(kind, ns == ctx.netns.end() ? fmt::format("netns:{}", l.netns_ino) : ns->second);
    }
    case bpf::kLinkXdp:
    case bpf::kLinkTcx:
    case bpf::kLinkNetkit: {
      const InterfaceAttach* i = interface_of(l, ctx);
      const std::string ifname = i ? i->name : fmt::format("ifindex {}", l.ifindex);
      const std::string netns = i ? i->netns : "";
      if (l.type == bpf::kLinkXdp) {
        return i ? xdp_point(*i, l.prog_id) : in_netns("xdp/" + ifname, netns);
      }
      const bool tcx = l.type == bpf::kLinkTcx;
      const bool first = l.attach_type == (tcx ? bpf::kAttachTcxIngress : bpf::kAttachNetkitPrimary);
      return in_netns(fmt::format("{}/{}/{}", tcx ? "tcx" : "netkit",
                                  tcx ? (first ? "ingress" : "egress") : (first ? "primary" : "peer"),
                                  ifname),
                      netns);
    }
    default:
      return fmt::format("link type {}", l.type);
  }
}

AttachScan scan_attach_points(const std::optional<Cgroup2Mount>& cgroup2, uint32_t source,
                              uint64_t time_ns) {
  AttachScan scan;
  AttachContext ctx;
  std::vector<AttachEntry> queried;
  if (cgroup2) walk_cgroups(cgroup2->mount_point, ctx, &queried);
  const std::map<uint64_t, Netns> namespaces = network_namespaces();
  for (const auto& [ino, ns] : namespaces) ctx.netns[static_cast<uint32_t>(ino)] = ns.label;
  ctx.interfaces = all_interfaces(namespaces);
  for (const InterfaceAttach& i : ctx.interfaces) {
    for (uint32_t p : {i.xdp.driver, i.xdp.generic, i.xdp.offload}) {
      if (p) queried.push_back(AttachEntry{p, 0, 0, 0, xdp_point(i, p)});
    }
    add_interface_points(i, i.tcx_ingress, "tcx/ingress", queried);
    add_interface_points(i, i.tcx_egress, "tcx/egress", queried);
    add_interface_points(i, i.netkit_primary, "netkit/primary", queried);
    add_interface_points(i, i.netkit_peer, "netkit/peer", queried);
    add_interface_points(i, i.tc_ingress, "tc/ingress", queried);
    add_interface_points(i, i.tc_egress, "tc/egress", queried);
  }
  auto links = bpf::list_links();
  if (!links.ok()) {
    scan.failed = links.error();
    links = std::vector<bpf::LinkInfo>{};
  }
  find_categories(*links, ctx);
  std::set<std::pair<uint32_t, std::string>> seen;
  for (const bpf::LinkInfo& l : *links) {
    AttachEntry e{l.prog_id, l.id, source, time_ns, link_point(l, ctx)};
    seen.emplace(e.prog_id, e.point);
    scan.entries.push_back(std::move(e));
  }
  scan.links = links->size();
  // A perf event behind a link is both listed as the link and queried as an
  // fd: the link's entry, named by who holds the event.
  PerfFdScan fds = scan_perf_event_fds(source, time_ns);
  scan.perf_fds_lost = fds.lost;
  scan.fd_dirs_unreadable = fds.unreadable;
  for (AttachEntry& e : fds.entries) {
    auto linked = std::find_if(scan.entries.begin(), scan.entries.end(), [&](const AttachEntry& l) {
      return l.prog_id == e.prog_id && l.point == e.point && l.pid == 0;
    });
    if (linked != scan.entries.end()) {
      linked->pid = e.pid;
      linked->comm = e.comm;
    } else {
      queried.push_back(std::move(e));
    }
  }
  for (AttachEntry& e : queried) {
    if (!seen.emplace(e.prog_id, e.point).second) continue;  // listed as a link
    e.source = source;
    e.time_ns = time_ns;
    scan.entries.push_back(std::move(e));
  }
  std::sort(scan.entries.begin(), scan.entries.end(), [](const AttachEntry& a, const AttachEntry& b) {
    return std::tie(a.prog_id, a.point, a.link_id) < std::tie(b.prog_id, b.point, b.link_id);
  });
  scan.cgroup_paths = std::move(ctx.cgroup_paths);
  return scan;
}

std::vector<AttachEntry> scan_tc_filters(uint32_t source, uint64_t time_ns) {
  std::vector<AttachEntry> out;
  for (const InterfaceAttach& i : all_interfaces(network_namespaces(), true)) {
    add_interface_points(i, i.tc_ingress, "tc/ingress", out);
    add_interface_points(i, i.tc_egress, "tc/egress", out);
  }
  for (AttachEntry& e : out) {
    e.source = source;
    e.time_ns = time_ns;
  }
  return out;
}

std::vector<AttachEntry> program_points(const std::vector<AttachEntry>& listed,
                                        const std::vector<KnownProgram>& programs,
                                        const std::map<uint32_t, uint64_t>& test_runs) {
  std::set<uint32_t> named;
  std::set<std::pair<uint32_t, std::string>> have;
  for (const AttachEntry& e : listed) {
    named.insert(e.prog_id);
    have.emplace(e.prog_id, e.point);
  }
  std::vector<AttachEntry> out;
  for (const KnownProgram& p : programs) {
    if (p.type != kProgTypeSyscall) continue;
    named.insert(p.id);
    if (have.emplace(p.id, std::string(kPointSyscall)).second) {
      out.push_back(AttachEntry{p.id, 0, p.source, p.time_ns, std::string(kPointSyscall)});
    }
  }
  for (const auto& [id, first_run] : test_runs) {
    if (named.count(id)) continue;
    out.push_back(AttachEntry{id, 0, AttachEntry::kCaptured, first_run, std::string(kPointTestRunOnly)});
  }
  return out;
}

}  // namespace bpfprof::host
