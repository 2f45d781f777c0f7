// SPDX-License-Identifier: Apache-2.0
// Link enumeration and attach queries through libbpf. bpf_link_info is read
// into a buffer of our own laid out as the running kernel's (uapi of 6.6 and
// later: tcx, netkit, perf_event names): the build host's headers may be older,
// and the kernel accepts a longer info whose extra bytes are zero.
#include "bpf/attach.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "base/unique_fd.h"

namespace bpfprof::bpf {
namespace {

// bpf_link_info: u32 type, id, prog_id, then (8-aligned) the per-type union.
struct RawLinkInfo {
  uint32_t type, id, prog_id, pad;
  unsigned char u[112];
};
constexpr size_t kNameMax = 4096;  // PATH_MAX: uprobe file names

template <class T>
T at(const RawLinkInfo& r, size_t off) {
  T v;
  std::memcpy(&v, r.u + off, sizeof v);
  return v;
}
template <class T>
void put(RawLinkInfo& r, size_t off, T v) {
  std::memcpy(r.u + off, &v, sizeof v);
}

// Where a link type's name buffer goes: pointer offset, length offset in the union.
struct NameSlot {
  size_t ptr, len;
};
std::optional<NameSlot> name_slot(uint32_t type) {
  switch (type) {
    case kLinkRawTracepoint: return NameSlot{0, 8};
    case kLinkIter: return NameSlot{0, 8};
    case kLinkPerfEvent: return NameSlot{8, 16};    // after u32 type, u32 pad
    case kLinkUprobeMulti: return NameSlot{0, 32};  // path, path_size
    default: return std::nullopt;
  }
}

enum PerfEventType : uint32_t {
  kPerfUprobe = 1,
  kPerfUretprobe = 2,
  kPerfKprobe = 3,
  kPerfKretprobe = 4,
  kPerfTracepoint = kPerfEventTracepoint,
  kPerfEvent = 6,
};

Status get_link_info(int fd, RawLinkInfo& r) {
  __u32 len = sizeof r;
  if (int rc = bpf_obj_get_info_by_fd(fd, &r, &len); rc < 0) {
    return make_sys_error("bpf_obj_get_info_by_fd on link fd " + std::to_string(fd), -rc);
  }
  return ok_status();
}

Result<LinkInfo> read_link(int fd) {
  RawLinkInfo r{};
  BPFPROF_TRY(get_link_info(fd, r));
  std::string name;
  if (auto slot = name_slot(r.type)) {
    // Again with a buffer for the name (the first call told the type). A
    // perf_event link of a plain event refuses one: its first answer stays.
    std::vector<char> buf(kNameMax, '\0');
    RawLinkInfo named{};
    put<uint64_t>(named, slot->ptr, reinterpret_cast<uintptr_t>(buf.data()));
    put<uint32_t>(named, slot->len, static_cast<uint32_t>(buf.size()));
    if (get_link_info(fd, named).ok()) {
      r = named;
      buf.back() = '\0';
      name = buf.data();
    }
  }
  LinkInfo l;
  l.id = r.id;
  l.type = r.type;
  l.prog_id = r.prog_id;
  l.name = std::move(name);
  switch (r.type) {
    case kLinkTracing:
      l.attach_type = at<uint32_t>(r, 0);
      l.target_obj_id = at<uint32_t>(r, 4);
      l.target_btf_id = at<uint32_t>(r, 8);
      break;
    case kLinkCgroup:
      l.cgroup_id = at<uint64_t>(r, 0);
      l.attach_type = at<uint32_t>(r, 8);
      break;
    case kLinkNetns:
      l.netns_ino = at<uint32_t>(r, 0);
      l.attach_type = at<uint32_t>(r, 4);
      break;
    case kLinkXdp:
      l.ifindex = at<uint32_t>(r, 0);
      break;
    case kLinkStructOps:
      l.map_id = at<uint32_t>(r, 0);
      break;
    case kLinkNetfilter:
      l.netfilter_pf = at<uint32_t>(r, 0);
      l.netfilter_hook = at<uint32_t>(r, 4);
      l.netfilter_priority = at<int32_t>(r, 8);
      break;
    case kLinkPerfEvent:
      l.perf_event_type = at<uint32_t>(r, 0);
      if (l.perf_event_type >= kPerfUprobe && l.perf_event_type <= kPerfKretprobe) {
        l.offset = at<uint32_t>(r, 20);
      }
      break;
    case kLinkTcx:
    case kLinkNetkit:
      l.ifindex = at<uint32_t>(r, 0);
      l.attach_type = at<uint32_t>(r, 4);
      break;
    case kLinkSockmap:
      l.map_id = at<uint32_t>(r, 0);
      l.attach_type = at<uint32_t>(r, 4);
      break;
    default:
      break;
  }
  return l;
}

struct CgroupType {
  uint32_t type;
  const char* name;
};
// Section names as libbpf and bpftool users write them.
constexpr CgroupType kCgroupTypes[] = {
    {0, "cgroup_skb/ingress"},       {1, "cgroup_skb/egress"},
    {2, "cgroup/sock_create"},       {3, "sockops"},
    {6, "cgroup/dev"},               {8, "cgroup/bind4"},
    {9, "cgroup/bind6"},             {10, "cgroup/connect4"},
    {11, "cgroup/connect6"},         {12, "cgroup/post_bind4"},
    {13, "cgroup/post_bind6"},       {14, "cgroup/sendmsg4"},
    {15, "cgroup/sendmsg6"},         {18, "cgroup/sysctl"},
    {19, "cgroup/recvmsg4"},         {20, "cgroup/recvmsg6"},
    {21, "cgroup/getsockopt"},       {22, "cgroup/setsockopt"},
    {29, "cgroup/getpeername4"},     {30, "cgroup/getpeername6"},
    {31, "cgroup/getsockname4"},     {32, "cgroup/getsockname6"},
    {34, "cgroup/sock_release"},     {43, "lsm_cgroup"},
    {49, "cgroup/connect_unix"},     {50, "cgroup/sendmsg_unix"},
    {51, "cgroup/recvmsg_unix"},     {52, "cgroup/getpeername_unix"},
    {53, "cgroup/getsockname_unix"},
};

}  // namespace

Result<std::vector<LinkInfo>> list_links() {
  std::vector<LinkInfo> out;
  uint32_t id = 0;
  for (;;) {
    if (int rc = bpf_link_get_next_id(id, &id); rc < 0) {
      if (-rc == ENOENT) break;
      return make_sys_error("bpf_link_get_next_id after " + std::to_string(id), -rc);
    }
    auto link = link_by_id(id);
    if (link.ok()) out.push_back(std::move(link).value());
  }
  return out;
}

Result<LinkInfo> link_by_id(uint32_t id) {
  UniqueFd fd(bpf_link_get_fd_by_id(id));
  if (!fd.valid()) {
    const int err = errno;
    Error e = make_sys_error("bpf_link_get_fd_by_id " + std::to_string(id), err);
    if (err == ENOENT) e.code = Errc::kNotFound;
    return e;
  }
  return read_link(fd.get());
}

std::vector<uint32_t> cgroup_programs(int cgroup_fd, uint32_t attach_type) {
  std::vector<uint32_t> ids(64);
  for (;;) {
    __u32 count = static_cast<__u32>(ids.size());
    __u32 flags = 0;
    const int rc = bpf_prog_query(cgroup_fd, static_cast<bpf_attach_type>(attach_type), 0, &flags,
                                  ids.data(), &count);
    if (rc < 0) {
      if (-rc == ENOSPC && ids.size() < 65536) {
        ids.resize(ids.size() * 4);
        continue;
      }
      return {};
    }
    ids.resize(count);
    return ids;
  }
}

const std::vector<uint32_t>& cgroup_attach_types() {
  static const std::vector<uint32_t> types = [] {
    std::vector<uint32_t> t;
    for (const CgroupType& c : kCgroupTypes) t.push_back(c.type);
    return t;
  }();
  return types;
}

XdpPrograms xdp_programs(int ifindex) {
  LIBBPF_OPTS(bpf_xdp_query_opts, q);
  XdpPrograms out;
  if (bpf_xdp_query(ifindex, 0, &q) < 0) return out;
  out.driver = q.drv_prog_id;
  out.generic = q.skb_prog_id;
  out.offload = q.hw_prog_id;
  // A single program attached in one mode is reported as prog_id only.
  if (!out.driver && !out.generic && !out.offload && q.prog_id) {
    if (q.attach_mode == XDP_ATTACHED_SKB) {
      out.generic = q.prog_id;
    } else if (q.attach_mode == XDP_ATTACHED_HW) {
      out.offload = q.prog_id;
    } else {
      out.driver = q.prog_id;
    }
  }
  return out;
}

std::vector<uint32_t> tcx_programs(int ifindex, uint32_t attach_type) {
  return cgroup_programs(ifindex, attach_type);  // BPF_PROG_QUERY by target_ifindex
}

std::string kernel_btf_type_name(uint32_t obj_id, uint32_t type_id) {
  static std::mutex mu;
  static std::map<uint32_t, std::unique_ptr<btf, void (*)(btf*)>> loaded;
  std::lock_guard lock(mu);
  auto it = loaded.find(obj_id);
  if (it == loaded.end()) {
    // Module BTF is split BTF on top of vmlinux's.
    btf* vmlinux = nullptr;
    if (obj_id != 1) {
      auto base = loaded.find(1);
      if (base == loaded.end()) {
        base = loaded.emplace(1, std::unique_ptr<btf, void (*)(btf*)>(
                                     btf__load_from_kernel_by_id(1), &btf__free))
                   .first;
      }
      vmlinux = base->second.get();
    }
    btf* b = vmlinux ? btf__load_from_kernel_by_id_split(obj_id, vmlinux)
                     : btf__load_from_kernel_by_id(obj_id);
    it = loaded.emplace(obj_id, std::unique_ptr<btf, void (*)(btf*)>(b, &btf__free)).first;
  }
  if (!it->second) return {};
  const btf_type* t = btf__type_by_id(it->second.get(), type_id);
  const char* name = t ? btf__name_by_offset(it->second.get(), t->name_off) : nullptr;
  return name ? name : "";
}

std::string cgroup_attach_name(uint32_t attach_type) {
  for (const CgroupType& c : kCgroupTypes) {
    if (c.type == attach_type) return c.name;
  }
  return fmt::format("attach_type_{}", attach_type);
}

std::string tracing_attach_prefix(uint32_t attach_type) {
  switch (attach_type) {
    case 23: return "tp_btf";
    case 24: return "fentry";
    case 25: return "fexit";
    case 26: return "fmod_ret";
    case 27: return "lsm";
    case 28: return "iter";
    default: return "freplace";  // an extension program (target_obj_id is a program)
  }
}

FdQuery perf_event_fd_query(int pid, int fd) {
  FdQuery q;
  std::string buf(kNameMax, '\0');
  __u32 len = static_cast<__u32>(buf.size());
  __u32 prog_id = 0, fd_type = 0;
  __u64 offset = 0, addr = 0;
  if (int rc = bpf_task_fd_query(pid, fd, 0, buf.data(), &len, &prog_id, &fd_type, &offset, &addr);
      rc < 0) {
    q.err = -rc;
    return q;
  }
  buf.resize(::strnlen(buf.c_str(), std::min<size_t>(len, buf.size())));
  LinkInfo& l = q.link;
  l.prog_id = prog_id;
  l.name = buf;
  l.type = kLinkPerfEvent;
  switch (fd_type) {  // uapi enum bpf_task_fd_type
    case 0:  // BPF_FD_TYPE_RAW_TRACEPOINT
      l.type = kLinkRawTracepoint;
      break;
    case 1: l.perf_event_type = kPerfTracepoint; break;
    case 2: l.perf_event_type = kPerfKprobe; break;
    case 3: l.perf_event_type = kPerfKretprobe; break;
    case 4: l.perf_event_type = kPerfUprobe; break;
    case 5: l.perf_event_type = kPerfUretprobe; break;
    default: l.perf_event_type = kPerfEvent; break;
  }
  const bool probe = l.perf_event_type >= kPerfUprobe && l.perf_event_type <= kPerfKretprobe;
  if (probe && l.name.empty() && addr) {
    l.name = fmt::format("{:#x}", addr);  // a kprobe placed by address
  } else if (probe) {
    l.offset = offset;
  }
  return q;
}

std::optional<std::string> self_named_point(const LinkInfo& l) {
  auto with_offset = [&](const char* kind) {
    return l.offset ? fmt::format("{}/{}+{:#x}", kind, l.name, l.offset)
                    : fmt::format("{}/{}", kind, l.name);
  };
  switch (l.type) {
    case kLinkRawTracepoint: return "raw_tp/" + l.name;
    case kLinkIter: return "iter/" + l.name;
    case kLinkStructOps: return fmt::format("struct_ops/map {}", l.map_id);
    case kLinkNetfilter:
      return fmt::format("netfilter/pf {} hook {} priority {}", l.netfilter_pf, l.netfilter_hook,
                         l.netfilter_priority);
    case kLinkKprobeMulti: return std::string("kprobe_multi");
    case kLinkUprobeMulti: return "uprobe_multi/" + l.name;
    case kLinkSockmap: return fmt::format("sockmap/map {}", l.map_id);
    case kLinkPerfEvent:
      switch (l.perf_event_type) {
        case kPerfKprobe: return with_offset("kprobe");
        case kPerfKretprobe: return with_offset("kretprobe");
        case kPerfUprobe: return with_offset("uprobe");
        case kPerfUretprobe: return with_offset("uretprobe");
        case kPerfTracepoint: return std::nullopt;  // the caller adds the category
        default: return std::string("perf_event");
      }
    default: return std::nullopt;
  }
}

}  // namespace bpfprof::bpf
