// SPDX-License-Identifier: Apache-2.0
/*
 * In-kernel capture of every program loaded through BPF_PROG_LOAD, at the
 * moment the load returns: what bpf_prog_info would report for it, read from
 * the kernel's own structures and written into a BPF ring buffer that the
 * recorder drains on its normal cadence (no wake-up per record).
 *
 * Two tracepoint programs: sys_enter_bpf remembers, per thread, that the
 * thread is loading a program; sys_exit_bpf takes the fd the load returned,
 * finds the new struct bpf_prog behind it in the thread's file table and
 * copies it out. The loader still holds that fd, so the program cannot be
 * gone; no reference is taken and nothing waits on user space.
 *
 * The same two programs capture the attachments made during the recording:
 * at the exit of BPF_LINK_CREATE and BPF_RAW_TRACEPOINT_OPEN the new struct
 * bpf_link behind the returned fd (its id, type, program and what names its
 * point), at the exit of BPF_PROG_ATTACH to a cgroup or an interface the
 * program and the target; and at the entry of BPF_PROG_TEST_RUN the program
 * run (once per program); at the exit of BPF_PROG_BIND_MAP the map bound.
 *
 * One object, in files by what it captures: kernel_types.h (the kernel's
 * types, CO-RE: only the fields read, relocated against the running kernel's
 * BTF at load), send.h (rings, maps, counters, sending in pieces),
 * prog_load.h (programs at load), links.h (links and attachments); the test
 * runs and the two tracepoint programs that dispatch are here.
 */
#include "kernel_types.h"
#include "send.h"
#include "prog_load.h"
#include "links.h"

SEC("tracepoint/syscalls/sys_enter_bpf")
int capture_enter(struct sys_enter_ctx *ctx)
{
	struct pending_cmd p = { .cmd = ctx->args[0], .attr = ctx->args[1] };
	__u64 key;

	if (p.cmd == CMD_PROG_TEST_RUN) {
		struct capture_test_run t = { .hdr = { .kind = CAPTURE_TEST_RUN } };
		struct bpf_prog *prog;
		__u32 fd = 0;
		__u8 one = 1;

		/* attr->test.prog_fd, first in its struct */
		if (bpf_probe_read_user(&fd, sizeof(fd), (void *)ctx->args[1]))
			return 0;
		prog = fd_prog(fd);
		t.hdr.id = BPF_CORE_READ(prog, aux, id);
		if (!t.hdr.id || bpf_map_lookup_elem(&test_run_sent, &t.hdr.id))
			return 0;
		t.time = bpf_ktime_get_ns();
		if (bpf_ringbuf_output(&events, &t, sizeof(t), BPF_RB_NO_WAKEUP)) {
			count_lost();
			return 0;
		}
		bpf_map_update_elem(&test_run_sent, &t.hdr.id, &one, BPF_ANY);
		return 0;
	}
	if (p.cmd != CMD_PROG_LOAD && p.cmd != CMD_LINK_CREATE && p.cmd != CMD_RAW_TRACEPOINT_OPEN &&
	    p.cmd != CMD_PROG_ATTACH && p.cmd != CMD_PROG_BIND_MAP)
		return 0;
	key = bpf_get_current_pid_tgid();
	/* Counted only when new: an entry whose exit was not seen (none is
	 * expected: the exit program is attached first) is overwritten. */
	if (!bpf_map_update_elem(&pending, &key, &p, BPF_NOEXIST))
		__sync_fetch_and_add(&pending_count, 1);
	else
		bpf_map_update_elem(&pending, &key, &p, BPF_ANY);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_bpf")
int capture_exit(struct sys_exit_ctx *ctx)
{
	struct pending_cmd *w, p;
	__u64 key;

	/* Nothing pending on any thread: this call's command is not captured. */
	if (!*(volatile __u64 *)&pending_count)
		return 0;
	key = bpf_get_current_pid_tgid();
	w = bpf_map_lookup_elem(&pending, &key);
	if (!w)
		return 0;
	p = *w;
	if (!bpf_map_delete_elem(&pending, &key))
		__sync_fetch_and_add(&pending_count, -1);
	if (ctx->ret < 0)
		return 0;
	switch (p.cmd) {
	case CMD_PROG_LOAD:
		return capture_load(ctx->ret);
	case CMD_LINK_CREATE:
	case CMD_RAW_TRACEPOINT_OPEN:
		return capture_link(ctx->ret);
	case CMD_PROG_ATTACH:
		return capture_prog_attach(p.attr);
	case CMD_PROG_BIND_MAP:
		return capture_bind_map(p.attr);
	default:
		return 0;
	}
}

char LICENSE[] SEC("license") = "GPL";
