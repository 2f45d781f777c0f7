/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one hot loop every workload program burns CPU in: bpf_loop() calls
 * burn_step() burn_iters times, and burn_step's work sits on the single
 * line marked HOT LINE below; the build records that line for the truth
 * file.
 *
 * Why bpf_loop and not a plain bounded loop: the verifier walks a plain loop
 * once per iteration and compares each walk with every earlier one, so
 * loading a 5000-iteration loop took 150+ ms. A bpf_loop callback is
 * verified until its state converges (a few passes), whatever the count,
 * and the kernel inlines the bpf_loop call into a loop in the caller.
 */
#ifndef BPFPROF_WORKLOAD_BURN_BPF_H
#define BPFPROF_WORKLOAD_BURN_BPF_H

#include <linux/types.h>
#include <bpf/bpf_helpers.h>

/* Callback calls per burn(); the loader sets it between open and load. */
const volatile __u32 burn_iters = 256;

struct burn_state {
	__u64 x;
};

/* Sixteen unrolled xorshift rounds per call: straight-line code, one line. */
static long burn_step(__u64 index, void *ctx)
{
	struct burn_state *s = ctx;
	__u64 x = s->x + index;
	int k;

#pragma clang loop unroll(full)
	for (k = 0; k < 16; k++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; s->x += x; } /* HOT LINE */
	return 0;
}

static __always_inline __u64 burn(__u64 x)
{
	struct burn_state s = { .x = x };

	bpf_loop(burn_iters, burn_step, &s, 0);
	return s.x;
}

#endif
