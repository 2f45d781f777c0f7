// SPDX-License-Identifier: Apache-2.0
// Classic tc: the BPF programs of the cls_bpf filters on an interface's
// clsact qdisc (what `tc filter add ... bpf` and libbpf's bpf_tc_attach
// make), listed with an rtnetlink RTM_GETTFILTER dump per direction. libbpf
// has no listing (bpf_tc_query needs the filter's handle and priority).
// Only the recorder asks (DESIGN rule 1).
#pragma once

#include <cstdint>
#include <vector>

#include "base/byte_cursor.h"
#include "base/error.h"

namespace bpfprof::bpf {

enum class TcDirection { kIngress, kEgress };

// The programs of the cls_bpf filters at the clsact ingress or egress of
// interface `ifindex` of the calling thread's network namespace, every chain
// and priority, in the kernel's order. Empty without a clsact qdisc; an
// error when netlink refuses or answers what does not parse.
Result<std::vector<uint32_t>> tc_programs(int ifindex, TcDirection direction);

// One datagram of an RTM_GETTFILTER dump: appends the program id
// (TCA_OPTIONS/TCA_BPF_ID) of every filter of kind "bpf" to `ids`. True
// once the dump's NLMSG_DONE is seen; an error for NLMSG_ERROR or bytes
// that are not whole netlink messages and attributes.
Result<bool> parse_tc_filter_dump(Bytes datagram, std::vector<uint32_t>& ids);

}  // namespace bpfprof::bpf
