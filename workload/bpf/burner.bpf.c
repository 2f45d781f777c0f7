// SPDX-License-Identifier: Apache-2.0
/*
 * Burner programs: one tc (SCHED_CLS) entry point per workload kind, each
 * spending its time in burn(). They share code but differ in name so a
 * profile tells the kinds apart; the loader enables exactly one of them per
 * loaded object.
 *
 * Not XDP: an XDP test run with repeat > 1 switches the XDP dispatcher to the
 * program and back, which waits for RCU grace periods (~16 ms a call here)
 * and registers dispatcher ksyms, noise in every recording.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "burn.bpf.h"

/*
 * The programs' metadata: libbpf binds .rodata to each program of the object,
 * so `bpftool prog show` and bpfprof's report list these variables for them
 * (the code reads neither).
 */
const volatile char bpf_metadata_workload[] = "bpfprof-workload burner";
const volatile __u32 bpf_metadata_kinds = 3;

static __always_inline int burn_packet(struct __sk_buff *ctx)
{
	__u64 x = ctx->len + 1;

	return burn(x) & 1 ? TC_ACT_OK : TC_ACT_SHOT;
}

SEC("tc")
int burner(struct __sk_buff *ctx)
{
	return burn_packet(ctx);
}

SEC("tc")
int long_burner(struct __sk_buff *ctx)
{
	return burn_packet(ctx);
}

SEC("tc")
int hold_burner(struct __sk_buff *ctx)
{
	return burn_packet(ctx);
}

char LICENSE[] SEC("license") = "GPL";
