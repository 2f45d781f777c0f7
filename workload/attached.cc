// SPDX-License-Identifier: Apache-2.0
#include "workload/attached.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include "base/unique_fd.h"
#include "bpf/prog_info.h"
#include "workload/embedded.h"

namespace bpfprof::workload {
namespace {

constexpr const char* kVethOut = "bpfprof0";  // frames are sent here...
constexpr const char* kVethIn = "bpfprof1";   // ...and arrive here, through XDP

// Appends one netlink attribute; returns where it starts (for nesting).
size_t put_attr(std::vector<unsigned char>& msg, uint16_t type, const void* data, size_t len) {
  const size_t at = msg.size();
  nlattr a{};
  a.nla_len = static_cast<uint16_t>(NLA_HDRLEN + len);
  a.nla_type = type;
  msg.resize(at + NLA_ALIGN(a.nla_len));
  std::memcpy(msg.data() + at, &a, sizeof a);
  if (len) std::memcpy(msg.data() + at + NLA_HDRLEN, data, len);
  return at;
}
void end_nest(std::vector<unsigned char>& msg, size_t at) {
  const auto len = static_cast<uint16_t>(msg.size() - at);
  std::memcpy(msg.data() + at, &len, sizeof len);
}

// `ip link add bpfprof0 type veth peer name bpfprof1`, through rtnetlink.
Status add_veth_pair() {
  std::vector<unsigned char> msg(NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(ifinfomsg)), 0);
  put_attr(msg, IFLA_IFNAME, kVethOut, std::strlen(kVethOut) + 1);
  const size_t linkinfo = put_attr(msg, IFLA_LINKINFO | NLA_F_NESTED, nullptr, 0);
  put_attr(msg, IFLA_INFO_KIND, "veth", 5);
  const size_t data = put_attr(msg, IFLA_INFO_DATA | NLA_F_NESTED, nullptr, 0);
  const size_t peer = put_attr(msg, VETH_INFO_PEER | NLA_F_NESTED, nullptr, 0);
  msg.resize(msg.size() + NLMSG_ALIGN(sizeof(ifinfomsg)), 0);  // the peer's ifinfomsg
  put_attr(msg, IFLA_IFNAME, kVethIn, std::strlen(kVethIn) + 1);
  end_nest(msg, peer);
  end_nest(msg, data);
  end_nest(msg, linkinfo);
  nlmsghdr h{};
  h.nlmsg_len = static_cast<uint32_t>(msg.size());
  h.nlmsg_type = RTM_NEWLINK;
  h.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
  h.nlmsg_seq = 1;
  std::memcpy(msg.data(), &h, sizeof h);

  UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!fd.valid()) return make_sys_error("opening an rtnetlink socket", errno);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd.get(), msg.data(), msg.size(), 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof kernel) < 0) {
    return make_sys_error("sending RTM_NEWLINK (veth)", errno);
  }
  unsigned char reply[4096];
  const ssize_t n = ::recv(fd.get(), reply, sizeof reply, 0);
  if (n < static_cast<ssize_t>(NLMSG_HDRLEN + sizeof(nlmsgerr))) {
    return make_sys_error("reading the RTM_NEWLINK answer", n < 0 ? errno : EIO);
  }
  nlmsgerr err{};
  std::memcpy(&err, reply + NLMSG_HDRLEN, sizeof err);
  if (err.error != 0) return make_sys_error("creating the veth pair", -err.error);
  return ok_status();
}

Status set_up(const char* ifname) {
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return make_sys_error("opening a socket", errno);
  ifreq r{};
  std::strncpy(r.ifr_name, ifname, IFNAMSIZ - 1);
  if (::ioctl(fd.get(), SIOCGIFFLAGS, &r) != 0) return make_sys_error(std::string("SIOCGIFFLAGS ") + ifname, errno);
  r.ifr_flags = static_cast<short>(r.ifr_flags | IFF_UP);
  if (::ioctl(fd.get(), SIOCSIFFLAGS, &r) != 0) return make_sys_error(std::string("bringing up ") + ifname, errno);
  return ok_status();
}

// A mount namespace where tracefs is mounted (libbpf reads a tracepoint's id
// there) and a network namespace with lo up and the veth pair.
Status enter_namespaces() {
  if (::unshare(CLONE_NEWNS | CLONE_NEWNET) != 0) return make_sys_error("unshare(mount, net)", errno);
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return make_sys_error("making mounts private", errno);
  struct stat st{};
  if (::stat("/sys/kernel/tracing/events", &st) != 0 &&
      ::mount("nodev", "/sys/kernel/tracing", "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    return make_sys_error("mounting tracefs in the workload's mount namespace", errno);
  }
  BPFPROF_TRY(set_up("lo"));
  BPFPROF_TRY(add_veth_pair());
  BPFPROF_TRY(set_up(kVethOut));
  return set_up(kVethIn);
}

Status join_cgroup(const std::string& dir) {
  const std::string procs = dir + "/cgroup.procs";
  UniqueFd fd(::open(procs.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return make_sys_error("opening " + procs, errno);
  const std::string pid = std::to_string(::getpid());
  if (::write(fd.get(), pid.data(), pid.size()) < 0) return make_sys_error("writing " + procs, errno);
  return ok_status();
}

Status set_rodata(bpf_object* obj, const char* var, uint32_t value) {
  return set_rodata_u32(obj, var, value);
}

Status fill_truth(int fd, ProgramTruth& t) {
  bpf_prog_info info{};
  uint32_t len = sizeof info;
  if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) return make_sys_error("bpf_prog_info", errno);
  t.id = info.id;
  t.name.assign(info.name, strnlen(info.name, sizeof info.name));
  bpf::Tag tag;
  std::memcpy(tag.data(), info.tag, tag.size());
  t.tag = bpf::tag_hex(tag);
  return ok_status();
}

using LinkPtr = std::unique_ptr<bpf_link, int (*)(bpf_link*)>;

}  // namespace

Result<std::vector<ProgramTruth>> run_attached(const AttachedOptions& o, const std::atomic<bool>& stop,
                                               const std::function<void()>& on_ready) {
  BPFPROF_TRY(enter_namespaces());
  if (!o.cgroup.empty()) BPFPROF_TRY(join_cgroup(o.cgroup));
  struct stat ns{};
  if (::stat("/proc/self/ns/net", &ns) != 0) return make_sys_error("stat /proc/self/ns/net", errno);
  const std::string netns = "@netns:" + std::to_string(ns.st_ino);
  const int ifindex = static_cast<int>(::if_nametoindex(kVethIn));
  if (ifindex == 0) return make_sys_error(std::string("if_nametoindex ") + kVethIn, errno);

  const EmbeddedObject* embedded = nullptr;
  for (const EmbeddedObject& e : embedded_objects())
    if (e.name == "attached") embedded = &e;
  if (!embedded) return make_error(Errc::kInternal, "no embedded BPF object attached");
  LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = "attached");
  std::unique_ptr<bpf_object, void (*)(bpf_object*)> object(
      bpf_object__open_mem(embedded->bytes.data(), embedded->bytes.size(), &opts), &bpf_object__close);
  if (!object) return make_sys_error("opening BPF object attached", errno);
  BPFPROF_TRY(set_rodata(object.get(), "burn_iters", o.burn_iters));
  BPFPROF_TRY(set_rodata(object.get(), "target_tgid", static_cast<uint32_t>(::getpid())));
  bpf_program* skb = bpf_object__find_program_by_name(object.get(), "attached_skb");
  if (skb && o.cgroup.empty()) bpf_program__set_autoload(skb, false);
  bpf_program* tc = bpf_object__find_program_by_name(object.get(), "attached_tc");
  if (tc && !o.tc) bpf_program__set_autoload(tc, false);
  if (int err = bpf_object__load(object.get()); err != 0) {
    Error e = make_sys_error("loading the attached programs", -err);
    if (e.code == Errc::kPermission) e.message += " (needs CAP_BPF / root)";
    return e;
  }

  // Every program, attached through a link this process owns.
  std::vector<ProgramTruth> truth;
  std::vector<LinkPtr> links;
  UniqueFd cgroup_fd;
  if (!o.cgroup.empty()) {
    cgroup_fd.reset(::open(o.cgroup.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!cgroup_fd.valid()) return make_sys_error("opening " + o.cgroup, errno);
  }
  int prog_attached = -1;  // the program attached with BPF_PROG_ATTACH
  // The clsact qdisc of the tc filter (it goes with the namespace at exit).
  LIBBPF_OPTS(bpf_tc_hook, tc_hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
  LIBBPF_OPTS(bpf_tc_opts, tc_opts, .handle = 1, .priority = 1);
  bool tc_attached = false;
  bpf_program* p = nullptr;
  bpf_object__for_each_program(p, object.get()) {
    if (!bpf_program__autoload(p)) continue;
    const std::string name = bpf_program__name(p);
    ProgramTruth t;
    t.kind = Kind::kAttached;
    bpf_link* link = nullptr;
    if (name == "attached_tp") {
      link = bpf_program__attach(p);
      t.attach = {"tracepoint/syscalls/sys_enter_getppid"};
    } else if (name == "attached_raw_tp") {
      link = bpf_program__attach(p);
      t.attach = {"raw_tp/task_rename"};
    } else if (name == "attached_xdp") {
      link = bpf_program__attach_xdp(p, ifindex);
      t.attach = {std::string("xdp/") + kVethIn + netns};
    } else if (name == "attached_tc") {
      t.attach = {std::string("tc/ingress/") + kVethIn + netns};
      if (int err = bpf_tc_hook_create(&tc_hook); err != 0 && err != -EEXIST)
        return make_sys_error("creating the clsact qdisc", -err);
      tc_opts.prog_fd = bpf_program__fd(p);
      if (int err = bpf_tc_attach(&tc_hook, &tc_opts); err != 0)
        return make_sys_error("attaching " + name + " (cls_bpf)", -err);
      tc_attached = true;
    } else if (name == "attached_skb") {
      t.attach = {"cgroup_skb/egress:" + o.cgroup};
      if (o.prog_attach) {
        if (bpf_prog_attach(bpf_program__fd(p), cgroup_fd.get(), BPF_CGROUP_INET_EGRESS, 0) != 0)
          return make_sys_error("BPF_PROG_ATTACH " + name, errno);
        prog_attached = bpf_program__fd(p);
      } else {
        link = bpf_program__attach_cgroup(p, cgroup_fd.get());
      }
    }
    const bool no_link = prog_attached == bpf_program__fd(p) || (name == "attached_tc" && tc_attached);
    if (!link && !no_link) return make_sys_error("attaching " + name, errno);
    if (link) links.emplace_back(link, &bpf_link__destroy);
    BPFPROF_TRY(fill_truth(bpf_program__fd(p), t));
    t.load_ns = monotonic_ns();
    t.load_tid = static_cast<uint32_t>(gettid());
    truth.push_back(std::move(t));
  }
  on_ready();

  // Trigger each program until stopped: getppid (tracepoint), a rename
  // (raw_tp/task_rename), a frame into the veth (XDP on its peer), a UDP
  // datagram from inside the cgroup (cgroup_skb/egress).
  UniqueFd raw(::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL)));
  UniqueFd udp(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!raw.valid() || !udp.valid()) return make_sys_error("opening the trigger sockets", errno);
  sockaddr_ll out{};
  out.sll_family = AF_PACKET;
  out.sll_ifindex = static_cast<int>(::if_nametoindex(kVethOut));
  out.sll_halen = ETH_ALEN;
  std::memset(out.sll_addr, 0xff, ETH_ALEN);
  unsigned char frame[64] = {};
  std::memset(frame, 0xff, ETH_ALEN);  // broadcast, ethertype 0x88b5 (local experimental)
  frame[12] = 0x88;
  frame[13] = 0xb5;
  sockaddr_in discard{};
  discard.sin_family = AF_INET;
  discard.sin_port = htons(9);
  discard.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  char comm[16] = {};
  ::prctl(PR_GET_NAME, comm);
  const uint64_t end = o.duration_ns ? monotonic_ns() + o.duration_ns : 0;
  for (uint64_t round = 0; !stop.load() && (end == 0 || monotonic_ns() < end); round++) {
    (void)::getppid();
    ::prctl(PR_SET_NAME, round % 2 ? "attached-a" : "attached-b");
    (void)::sendto(raw.get(), frame, sizeof frame, 0, reinterpret_cast<sockaddr*>(&out), sizeof out);
    (void)::sendto(udp.get(), frame, 8, 0, reinterpret_cast<sockaddr*>(&discard), sizeof discard);
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  ::prctl(PR_SET_NAME, comm);
  if (prog_attached >= 0 &&
      bpf_prog_detach2(prog_attached, cgroup_fd.get(), BPF_CGROUP_INET_EGRESS) != 0) {
    return make_sys_error("BPF_PROG_DETACH attached_skb", errno);
  }
  if (tc_attached) {
    tc_opts.prog_fd = tc_opts.prog_id = 0;
    tc_opts.flags = 0;
    if (int err = bpf_tc_detach(&tc_hook, &tc_opts); err != 0)
      return make_sys_error("detaching attached_tc", -err);
  }
  links.clear();
  object.reset();
  for (ProgramTruth& t : truth) t.unload_ns = monotonic_ns();
  return truth;
}

}  // namespace bpfprof::workload
