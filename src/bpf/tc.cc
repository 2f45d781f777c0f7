// SPDX-License-Identifier: Apache-2.0
#include "bpf/tc.h"

#include <linux/netlink.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include "base/unique_fd.h"

namespace bpfprof::bpf {
namespace {

constexpr size_t kAlign = 4;  // NLMSG_ALIGNTO == NLA_ALIGNTO

size_t aligned(size_t n) { return (n + kAlign - 1) & ~(kAlign - 1); }

// The attributes in `bytes` (a run of struct nlattr, each padded to 4):
// calls fn(type, payload) for each; an error when one overruns.
template <class Fn>
Status for_each_attr(Bytes bytes, Fn&& fn) {
  size_t at = 0;
  while (bytes.size() - at >= sizeof(nlattr)) {
    nlattr a;
    std::memcpy(&a, bytes.data() + at, sizeof a);
    if (a.nla_len < sizeof a || a.nla_len > bytes.size() - at) {
      return make_error(Errc::kBadRecord, "tc filter dump: attribute of length " +
                                              std::to_string(a.nla_len) + " overruns its message");
    }
    fn(static_cast<uint16_t>(a.nla_type & NLA_TYPE_MASK), bytes.subspan(at + sizeof a, a.nla_len - sizeof a));
    at += std::min(aligned(a.nla_len), bytes.size() - at);
  }
  return ok_status();
}

// The program of one RTM_NEWTFILTER message's attributes, 0 if not cls_bpf.
Result<uint32_t> bpf_filter_program(Bytes attrs) {
  bool is_bpf = false;
  Bytes options;
  BPFPROF_TRY(for_each_attr(attrs, [&](uint16_t type, Bytes payload) {
    if (type == TCA_KIND) {
      const std::string_view kind(reinterpret_cast<const char*>(payload.data()), payload.size());
      is_bpf = kind == std::string_view("bpf\0", 4) || kind == "bpf";
    } else if (type == TCA_OPTIONS) {
      options = payload;
    }
  }));
  uint32_t id = 0;
  if (!is_bpf) return id;
  BPFPROF_TRY(for_each_attr(options, [&](uint16_t type, Bytes payload) {
    if (type == TCA_BPF_ID && payload.size() >= sizeof id) std::memcpy(&id, payload.data(), sizeof id);
  }));
  return id;
}

// Calls fn(header, body) for each whole netlink message of a datagram.
template <class Fn>
Status for_each_message(Bytes datagram, Fn&& fn) {
  size_t at = 0;
  while (datagram.size() - at >= sizeof(nlmsghdr)) {
    nlmsghdr h;
    std::memcpy(&h, datagram.data() + at, sizeof h);
    if (h.nlmsg_len < sizeof h || h.nlmsg_len > datagram.size() - at) {
      return make_error(Errc::kBadRecord, "netlink: message of length " + std::to_string(h.nlmsg_len) +
                                              " at byte " + std::to_string(at) + " overruns the datagram");
    }
    if (!fn(h, datagram.subspan(at + sizeof h, h.nlmsg_len - sizeof h))) break;
    at += std::min(aligned(h.nlmsg_len), datagram.size() - at);
  }
  return ok_status();
}

// The errno of an NLMSG_ERROR body (0: an acknowledgement).
int error_of(Bytes body) {
  int32_t error = 0;
  if (body.size() >= sizeof error) std::memcpy(&error, body.data(), sizeof error);
  return -error;
}

// The kind of the qdisc at ffff: of interface `ifindex` ("clsact", the
// legacy "ingress", ...); "" when there is none. Kernels that answer a
// qdisc get only with NLM_F_ECHO are asked with it, and with NLM_F_ACK so
// that every kernel ends its answer with an acknowledgement.
Result<std::string> ingress_qdisc_kind(int fd, int ifindex) {
  struct {
    nlmsghdr h;
    tcmsg t;
  } req{};
  req.h.nlmsg_len = sizeof req;
  req.h.nlmsg_type = RTM_GETQDISC;
  req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ECHO | NLM_F_ACK;
  req.h.nlmsg_seq = 1;
  req.t.tcm_family = AF_UNSPEC;
  req.t.tcm_ifindex = ifindex;
  req.t.tcm_parent = TC_H_INGRESS;
  if (::send(fd, &req, sizeof req, 0) < 0) return make_sys_error("sending RTM_GETQDISC", errno);
  std::vector<std::byte> buf(8192);
  std::string kind;
  for (bool acked = false; !acked;) {
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_sys_error("reading RTM_GETQDISC's answer", errno);
    if (n == 0) return make_error(Errc::kBadRecord, "RTM_GETQDISC: answer ended early");
    Status parsed = ok_status();
    BPFPROF_TRY(for_each_message(Bytes(buf.data(), static_cast<size_t>(n)), [&](const nlmsghdr& h, Bytes body) {
      if (h.nlmsg_type == NLMSG_ERROR) {
        acked = true;
        if (error_of(body) != 0) kind.clear();  // no qdisc there (ENOENT, EINVAL)
        return false;
      }
      if (h.nlmsg_type != RTM_NEWQDISC || body.size() < aligned(sizeof(tcmsg))) return true;
      parsed = for_each_attr(body.subspan(aligned(sizeof(tcmsg))), [&](uint16_t type, Bytes payload) {
        if (type != TCA_KIND) return;
        const char* p = reinterpret_cast<const char*>(payload.data());
        kind.assign(p, strnlen(p, payload.size()));
      });
      return parsed.ok();
    }));
    BPFPROF_TRY(std::move(parsed));
  }
  return kind;
}

}  // namespace

Result<bool> parse_tc_filter_dump(Bytes datagram, std::vector<uint32_t>& ids) {
  bool done = false;
  Status failed = ok_status();
  BPFPROF_TRY(for_each_message(datagram, [&](const nlmsghdr& h, Bytes body) {
    if (h.nlmsg_type == NLMSG_DONE) {
      done = true;
    } else if (h.nlmsg_type == NLMSG_ERROR) {
      if (const int err = error_of(body); err != 0) failed = make_sys_error("RTM_GETTFILTER", err);
    } else if (h.nlmsg_type == RTM_NEWTFILTER) {
      if (body.size() < sizeof(tcmsg)) {
        failed = make_error(Errc::kBadRecord, "tc filter dump: RTM_NEWTFILTER shorter than tcmsg");
        return false;
      }
      auto id = bpf_filter_program(body.subspan(std::min(aligned(sizeof(tcmsg)), body.size())));
      if (!id.ok()) {
        failed = std::move(id).error();
        return false;
      }
      if (*id != 0) ids.push_back(*id);
    }
    return !done && failed.ok();
  }));
  BPFPROF_TRY(std::move(failed));
  return done;
}

Result<std::vector<uint32_t>> tc_programs(int ifindex, TcDirection direction) {
  UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!fd.valid()) return make_sys_error("opening an rtnetlink socket", errno);
  // An answer that never comes must not stop the recorder.
  const timeval timeout{2, 0};
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout) != 0) {
    return make_sys_error("setting the rtnetlink socket's timeout", errno);
  }
  // Only clsact has both directions: the legacy ingress qdisc would answer
  // the egress dump with its ingress filters.
  BPFPROF_ASSIGN_OR_RETURN(const std::string qdisc, ingress_qdisc_kind(fd.get(), ifindex));
  if (qdisc != "clsact" && (qdisc != "ingress" || direction != TcDirection::kIngress)) {
    return std::vector<uint32_t>{};
  }
  struct {
    nlmsghdr h;
    tcmsg t;
  } req{};
  req.h.nlmsg_len = sizeof req;
  req.h.nlmsg_type = RTM_GETTFILTER;
  req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.h.nlmsg_seq = 1;
  req.t.tcm_family = AF_UNSPEC;
  req.t.tcm_ifindex = ifindex;
  req.t.tcm_parent = TC_H_MAKE(TC_H_CLSACT, direction == TcDirection::kIngress ? TC_H_MIN_INGRESS
                                                                                : TC_H_MIN_EGRESS);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd.get(), &req, sizeof req, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) < 0) {
    return make_sys_error("sending RTM_GETTFILTER", errno);
  }
  std::vector<uint32_t> ids;
  std::vector<std::byte> buf(32768);
  for (;;) {
    const ssize_t n = ::recv(fd.get(), buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_sys_error("reading the tc filter dump", errno);
    }
    if (n == 0) return make_error(Errc::kBadRecord, "tc filter dump: ended without NLMSG_DONE");
    BPFPROF_ASSIGN_OR_RETURN(bool done,
                             parse_tc_filter_dump(Bytes(buf.data(), static_cast<size_t>(n)), ids));
    if (done) return ids;
  }
}

}  // namespace bpfprof::bpf
