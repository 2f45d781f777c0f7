// SPDX-License-Identifier: Apache-2.0
/*
 * Programs attached for real (bpfprof-workload --attached), one per kind of
 * attach point, each triggered by the workload's own actions:
 *   attached_tp      tracepoint/syscalls/sys_enter_getppid  getppid()
 *   attached_raw_tp  raw_tp/task_rename                     prctl(PR_SET_NAME)
 *   attached_xdp     xdp on a veth of the workload's netns   frames sent into its peer
 *   attached_skb     cgroup_skb/egress on the given cgroup  UDP sent from inside it
 *   attached_tc      tc (cls_bpf) at the veth's ingress      the frames XDP passes
 * The tracepoints fire for every task: those programs burn only for the
 * workload's process (target_tgid, set before load).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "burn.bpf.h"

const volatile __u32 target_tgid = 0;

static __always_inline int ours(void)
{
	return (bpf_get_current_pid_tgid() >> 32) == target_tgid;
}

SEC("tracepoint/syscalls/sys_enter_getppid")
int attached_tp(void *ctx)
{
	if (ours())
		burn(1);
	return 0;
}

SEC("raw_tp/task_rename")
int attached_raw_tp(void *ctx)
{
	if (ours())
		burn(2);
	return 0;
}

SEC("xdp")
int attached_xdp(struct xdp_md *ctx)
{
	return burn(ctx->data_end - ctx->data) & 0 ? XDP_DROP : XDP_PASS;
}

SEC("cgroup_skb/egress")
int attached_skb(struct __sk_buff *ctx)
{
	return burn(ctx->len) & 0 ? 0 : 1;
}

SEC("tc")
int attached_tc(struct __sk_buff *ctx)
{
	return burn(ctx->len) & 0 ? 2 /* TC_ACT_SHOT */ : 0 /* TC_ACT_OK */;
}

char LICENSE[] SEC("license") = "GPL";
