// SPDX-License-Identifier: Apache-2.0
/*
 * In-kernel capture of every program loaded through BPF_PROG_LOAD, at the
 * moment the load returns: what bpf_prog_info would report for it, read from
 * the kernel's own structures and written into a BPF ring buffer that the
 * recorder drains on its normal cadence (no wake-up per record).
 *
 * One tracepoint program, on sys_exit_bpf: it reads the command and its
 * attr from the caller's saved registers and returns at once for every
 * command it does not capture, so the other bpf() calls on the host pay one
 * tracepoint, not two (an entry program that noted captured commands per
 * thread cost every bpf() call a second one: +435 to +618 ns per call
 * against +210 to +349 ns for one program at the exit alone, here). For
 * BPF_PROG_LOAD it takes the fd the load returned, finds the new struct
 * bpf_prog behind it in the thread's file table and copies it out. The
 * loader still holds that fd, so the program cannot be gone; no reference
 * is taken and nothing waits on user space.
 *
 * The same program captures the attachments made during the recording: at
 * the exit of BPF_LINK_CREATE and BPF_RAW_TRACEPOINT_OPEN the new struct
 * bpf_link behind the returned fd (its id, type, program and what names its
 * point), at the exit of BPF_PROG_ATTACH to a cgroup or an interface the
 * program and the target; the program a BPF_PROG_TEST_RUN ran (once per
 * program); at the exit of BPF_PROG_BIND_MAP the map bound.
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

/* The bpf() command and its attr pointer, from the registers saved at entry. */
static __always_inline void syscall_args(__u64 *cmd, __u64 *attr)
{
	void *regs = (void *)bpf_task_pt_regs(bpf_get_current_task_btf());

	if (bpf_core_field_exists(struct pt_regs___x86, di)) {
		struct pt_regs___x86 *r = regs;

		*cmd = r->di;
		*attr = r->si;
	} else {
		struct pt_regs___arm64 *r = regs;

		*cmd = r->orig_x0;
		*attr = r->regs[1];
	}
}

/* The program a BPF_PROG_TEST_RUN ran, sent once per program. */
static __always_inline int capture_test_run(__u64 attr)
{
	struct capture_test_run t = { .hdr = { .kind = CAPTURE_TEST_RUN } };
	struct bpf_prog *prog;
	__u32 fd = 0;
	__u8 one = 1;

	/* attr->test.prog_fd, first in its struct */
	if (bpf_probe_read_user(&fd, sizeof(fd), (void *)attr))
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

SEC("tracepoint/syscalls/sys_exit_bpf")
int capture_exit(struct sys_exit_ctx *ctx)
{
	__u64 cmd, attr;

	syscall_args(&cmd, &attr);
	/* Decided from the command alone: every other one returns here. */
	if (cmd != CMD_PROG_LOAD && cmd != CMD_LINK_CREATE && cmd != CMD_RAW_TRACEPOINT_OPEN &&
	    cmd != CMD_PROG_ATTACH && cmd != CMD_PROG_BIND_MAP && cmd != CMD_PROG_TEST_RUN)
		return 0;
	if (ctx->ret < 0)
		return 0;
	switch (cmd) {
	case CMD_PROG_LOAD:
		return capture_load(ctx->ret);
	case CMD_LINK_CREATE:
	case CMD_RAW_TRACEPOINT_OPEN:
		return capture_link(ctx->ret);
	case CMD_PROG_ATTACH:
		return capture_prog_attach(attr);
	case CMD_PROG_BIND_MAP:
		return capture_bind_map(attr);
	case CMD_PROG_TEST_RUN:
		return capture_test_run(attr);
	default:
		return 0;
	}
}

char LICENSE[] SEC("license") = "GPL";
