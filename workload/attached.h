// SPDX-License-Identifier: Apache-2.0
// The workload's programs attached for real (--attached): a tracepoint, a
// raw tracepoint, XDP on a veth pair of a network namespace of its own and,
// given a cgroup, cgroup_skb/egress on it (through a link, or with
// BPF_PROG_ATTACH and BPF_PROG_DETACH), and on request a classic tc filter
// (cls_bpf, through netlink as libbpf's bpf_tc_attach makes it) at the
// veth's ingress; each triggered by the workload's own syscalls until
// stopped, then detached. The truth names each program's
// attach point as bpfprof names it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "workload/program.h"

namespace bpfprof::workload {

struct AttachedOptions {
  std::string cgroup;        // cgroup v2 directory to join and attach cgroup_skb to ("" = none)
  bool prog_attach = false;  // attach cgroup_skb with BPF_PROG_ATTACH (no link), detach at the end
  bool tc = false;           // attach a cls_bpf filter at the clsact ingress of the XDP veth
  uint64_t duration_ns = 0;  // detach after this long (0: at `stop`)
  uint32_t burn_iters = 16;  // per program execution
};

// Enters a mount and a network namespace of its own (the caller must not have
// started threads yet): tracefs is mounted there for the tracepoint's id and
// the veth pair lives there, so nothing outlives the process. Calls
// on_ready() once everything is attached, triggers the programs until `stop`
// (or the duration), detaches and unloads them, and returns their truth.
Result<std::vector<ProgramTruth>> run_attached(const AttachedOptions& options,
                                               const std::atomic<bool>& stop,
                                               const std::function<void()>& on_ready);

}  // namespace bpfprof::workload
