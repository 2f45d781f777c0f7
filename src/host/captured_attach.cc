// SPDX-License-Identifier: Apache-2.0
// What the in-kernel capture saw attached during the recording, named as the
// listing at a moment (attach_points.cc) names what it finds.
#include <dirent.h>
#include <net/if.h>

#include <fmt/format.h>

#include "base/clock.h"
#include "host/attach_internal.h"
#include "host/attach_points.h"

namespace bpfprof::host {

using detail::all_interfaces;
using detail::find_categories;
using detail::inode_of;
using detail::network_namespaces;
using detail::open_dir;
using detail::walk_cgroups;
using perfdata::AttachEntry;

std::optional<std::string> captured_point(const capture::CapturedLink& c, const AttachContext& base) {
  if (!c.has(CAPTURE_LINK_NAMED)) return std::nullopt;
  bpf::LinkInfo l;
  l.id = c.link_id;
  l.prog_id = c.prog_id;
  l.attach_type = c.attach_type;
  l.type = c.link_type;
  if (c.has(CAPTURE_LINK_PROG_ATTACH)) {
    const bool netkit = c.attach_type == bpf::kAttachNetkitPrimary || c.attach_type == bpf::kAttachNetkitPeer;
    l.type = c.cgroup_id ? bpf::kLinkCgroup : netkit ? bpf::kLinkNetkit : bpf::kLinkTcx;
  }
  // An interface as the listing would have found it: in its namespace, with
  // this program in the slot of its mode or direction.
  auto on_interface = [&]() {
    InterfaceAttach i;
    auto ns = base.netns.find(c.netns_ino);
    i.netns = ns == base.netns.end() ? fmt::format("netns:{}", c.netns_ino) : ns->second;
    i.ifindex = c.ifindex;
    i.name = c.ifname.empty() ? fmt::format("ifindex {}", c.ifindex) : c.ifname;
    if (l.type == bpf::kLinkXdp) {
      (c.xdp_mode == 0 ? i.xdp.generic : c.xdp_mode == 2 ? i.xdp.offload : i.xdp.driver) = c.prog_id;
    } else {
      i.tcx_ingress = i.tcx_egress = i.netkit_primary = i.netkit_peer = {c.prog_id};
    }
    AttachContext ctx;
    ctx.interfaces.push_back(std::move(i));
    l.ifindex = c.ifindex;
    return link_point(l, ctx);
  };
  switch (l.type) {
    case bpf::kLinkRawTracepoint:
      l.name = c.name;
      return link_point(l, base);
    case bpf::kLinkTracing:
      l.target_obj_id = c.target_obj_id;
      l.target_btf_id = c.target_btf_id;
      return link_point(l, base);
    case bpf::kLinkCgroup:
      l.cgroup_id = c.cgroup_id;
      return link_point(l, base);
    case bpf::kLinkNetns:
      l.netns_ino = c.netns_ino;
      return link_point(l, base);
    case bpf::kLinkXdp:
    case bpf::kLinkTcx:
    case bpf::kLinkNetkit:
      return on_interface();
    case bpf::kLinkPerfEvent: {
      if (!c.has(CAPTURE_LINK_TRACEPOINT)) return std::nullopt;
      l.perf_event_type = bpf::kPerfEventTracepoint;
      l.name = c.name;
      AttachContext ctx;
      if (!c.category.empty()) ctx.tracepoint_category[c.name] = c.category;
      return link_point(l, ctx);
    }
    default:
      return std::nullopt;
  }
}

CapturedAttachNamer::CapturedAttachNamer(std::optional<Cgroup2Mount> cgroup2,
                                         std::map<uint64_t, std::string> cgroup_paths)
    : cgroup2_(std::move(cgroup2)) {
  ctx_.cgroup_paths = std::move(cgroup_paths);
  own_netns_ = inode_of("/proc/self/ns/net").value_or(0);
}

void CapturedAttachNamer::know_cgroup(uint64_t id) {
  // A cgroup made after the start listing: the hierarchy as it is now.
  if (!id || ctx_.cgroup_paths.count(id) || !cgroup2_) return;
  walk_cgroups(cgroup2_->mount_point, ctx_, nullptr);
}

void CapturedAttachNamer::know_netns(uint32_t ino) {
  if (!ino || ctx_.netns.count(ino)) return;
  std::string label = fmt::format("netns:{}", ino);
  if (ino == own_netns_) {
    label.clear();
  } else {
    auto run = open_dir("/run/netns");
    while (dirent* e = run ? ::readdir(run.get()) : nullptr) {
      if (e->d_name[0] != '.' && inode_of(std::string("/run/netns/") + e->d_name) == ino) {
        label = e->d_name;
        break;
      }
    }
  }
  ctx_.netns[ino] = label;
}

std::optional<AttachEntry> CapturedAttachNamer::query(uint32_t link_id, uint64_t time_ns) {
  auto link = bpf::link_by_id(link_id);
  if (!link.ok()) {
    lost_++;
    return std::nullopt;
  }
  know_cgroup(link->cgroup_id);
  know_netns(link->netns_ino);
  AttachContext ctx = ctx_;
  find_categories({*link}, ctx);
  if (link->type == bpf::kLinkXdp || link->type == bpf::kLinkTcx || link->type == bpf::kLinkNetkit) {
    ctx.interfaces = all_interfaces(network_namespaces());
  }
  return AttachEntry{link->prog_id, link_id, AttachEntry::kById, time_ns, link_point(*link, ctx)};
}

void CapturedAttachNamer::name(const std::vector<capture::CapturedLink>& links,
                               const std::vector<uint32_t>& missed_link_ids,
                               std::vector<AttachEntry>& out) {
  for (const capture::CapturedLink& l : links) {
    know_cgroup(l.cgroup_id);
    know_netns(l.netns_ino);
    capture::CapturedLink c = l;
    // BPF_PROG_ATTACH gives an interface index only: named here if it is ours.
    char ifname[IF_NAMESIZE] = {};
    if (c.has(CAPTURE_LINK_PROG_ATTACH) && c.ifindex && c.netns_ino == own_netns_ &&
        ::if_indextoname(c.ifindex, ifname)) {
      c.ifname = ifname;
    }
    if (auto point = captured_point(c, ctx_)) {
      out.push_back(AttachEntry{l.prog_id, l.link_id, AttachEntry::kCaptured, l.time_ns, *point});
    } else if (l.link_id) {
      if (auto e = query(l.link_id, l.time_ns)) out.push_back(std::move(*e));
    }
  }
  for (uint32_t id : missed_link_ids) {
    if (auto e = query(id, monotonic_ns())) out.push_back(std::move(*e));
  }
}

}  // namespace bpfprof::host
