// SPDX-License-Identifier: Apache-2.0
/*
 * A bpf-to-bpf program: the entry point calls two non-inlined subprograms
 * that do the burning, so the kernel JITs three functions (one ksym each).
 * burn_left is global (verified once, on its own); burn_right is static
 * (verified in its caller's context): both kinds of subprogram appear.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "burn.bpf.h"

__noinline int burn_left(__u64 x)
{
	return burn(x) & 0xff;
}

static __noinline int burn_right(__u64 x)
{
	return burn(x ^ 0x5bd1e995) & 0xff;
}

SEC("tc")
int bpf2bpf(struct __sk_buff *ctx)
{
	__u64 x = ctx->len + 1;
	int a = burn_left(x);
	int b = burn_right(x + a);

	return (a ^ b) & 1 ? TC_ACT_OK : TC_ACT_SHOT;
}

char LICENSE[] SEC("license") = "GPL";
