// SPDX-License-Identifier: Apache-2.0
/*
 * The kernel types the capture reads, declared with only the fields read and
 * marked preserve_access_index (CORE): libbpf relocates every access against
 * the running kernel's BTF at load, so the object builds anywhere. With them,
 * the uapi numbers the capture tests against and the syscall tracepoints'
 * records.
 */
#pragma once

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#define CORE __attribute__((preserve_access_index))

struct btf {
	void *data;
	__u32 data_size;
	__u32 id;
} CORE;

struct bpf_prog;

struct bpf_map {
	enum bpf_map_type map_type;
	__u32 key_size;
	__u32 value_size;
	__u32 max_entries;
	__u32 map_flags;
	__u32 id;
	char name[16];
	struct btf *btf;
	__u32 btf_value_type_id;
} CORE;

/* An array map: its values start at `value` (direct value access loads
 * that address plus the offset). */
struct bpf_array {
	struct bpf_map map;
	char value[];
} CORE;

struct bpf_prog_aux {
	__u32 used_map_cnt;
	struct bpf_map **used_maps;
	__u32 id;
	__u32 func_cnt;
	__u32 attach_btf_id;
	struct btf *attach_btf;
	struct bpf_prog **func;
	struct bpf_prog *prog;
	__u64 load_time;
	__u32 verified_insns;
	char name[16];
	struct btf *btf;
	struct bpf_func_info *func_info;
	struct bpf_line_info *linfo;
	void **jited_linfo;
	__u32 func_info_cnt;
	__u32 nr_linfo;
} CORE;

struct bpf_prog {
	__u16 pages;
	__u16 jited : 1, jit_requested : 1, gpl_compatible : 1;
	enum bpf_prog_type type;
	__u32 len;
	__u32 jited_len;
	__u8 tag[8];
	void *bpf_func;
	struct bpf_prog_aux *aux;
} CORE;

struct file {
	void *private_data;
	struct inode *f_inode;
} CORE;

struct inode {
	void *i_private; /* a kernfs_node for a cgroup directory */
} CORE;

struct kernfs_node {
	__u64 id; /* a cgroup's id */
} CORE;

struct bpf_link {
	__u32 id;
	enum bpf_link_type type;
	struct bpf_prog *prog;
	enum bpf_attach_type attach_type; /* 6.17 on; older kernels: by id */
} CORE;

struct tracepoint {
	const char *name;
} CORE;

struct bpf_raw_event_map {
	struct tracepoint *tp;
} CORE;

struct bpf_raw_tp_link {
	struct bpf_link link;
	struct bpf_raw_event_map *btp;
} CORE;

struct cgroup {
	struct kernfs_node *kn;
} CORE;

struct bpf_cgroup_link {
	struct bpf_link link;
	struct cgroup *cgroup;
} CORE;

struct ns_common {
	unsigned int inum;
} CORE;

struct net {
	struct ns_common ns;
} CORE;

struct bpf_netns_link {
	struct bpf_link link;
	struct net *net;
} CORE;

struct bpf_xdp_link;

struct bpf_xdp_entity {
	struct bpf_prog *prog;
	struct bpf_xdp_link *link;
} CORE;

struct net_device {
	int ifindex;
	char name[16];
	struct {
		struct net *net;
	} nd_net;
	struct bpf_xdp_entity xdp_state[3]; /* by enum bpf_xdp_mode: skb, drv, hw */
} CORE;

struct bpf_xdp_link {
	struct bpf_link link;
	struct net_device *dev;
} CORE;

struct tcx_link {
	struct bpf_link link;
	struct net_device *dev;
} CORE;

struct trace_event_class {
	const char *system;
} CORE;

struct trace_event_call {
	struct trace_event_class *class;
	union {
		const char *name;
		struct tracepoint *tp;
	};
	int flags;
} CORE;

struct perf_event {
	struct trace_event_call *tp_event;
} CORE;

struct bpf_perf_link {
	struct bpf_link link;
	struct file *perf_file;
} CORE;

struct nsproxy {
	struct net *net_ns;
} CORE;

struct fdtable {
	unsigned int max_fds;
	struct file **fd;
} CORE;

struct files_struct {
	struct fdtable *fdt;
} CORE;

struct task_struct {
	struct files_struct *files;
	struct nsproxy *nsproxy;
} CORE;

/* enum bpf_link_type and trace_event_call flags, as numbers: the build
 * host's headers may be older than the kernel. */
#define LINK_RAW_TRACEPOINT 1
#define LINK_TRACING 2
#define LINK_CGROUP 3
#define LINK_NETNS 5
#define LINK_XDP 6
#define LINK_PERF_EVENT 7
#define LINK_TCX 11
#define TRACE_EVENT_FL_TRACEPOINT 8
#define TRACE_EVENT_FL_PROBES (32 | 64 | 128 | 256) /* kprobe, uprobe, eprobe, fprobe */

/* bpf() commands captured (uapi numbers, stable). */
#define CMD_PROG_LOAD 5
#define CMD_PROG_ATTACH 8
#define CMD_PROG_TEST_RUN 10
#define CMD_RAW_TRACEPOINT_OPEN 17
#define CMD_LINK_CREATE 28
#define CMD_PROG_BIND_MAP 35

/* The attach types of cgroup hooks (enum bpf_attach_type), as a bit mask. */
#define BIT(n) (1ull << (n))
#define CGROUP_ATTACH_TYPES                                                                   \
	(BIT(0) | BIT(1) | BIT(2) | BIT(3) | BIT(6) | BIT(8) | BIT(9) | BIT(10) | BIT(11) |   \
	 BIT(12) | BIT(13) | BIT(14) | BIT(15) | BIT(18) | BIT(19) | BIT(20) | BIT(21) |      \
	 BIT(22) | BIT(29) | BIT(30) | BIT(31) | BIT(32) | BIT(34) | BIT(43) | BIT(49) |      \
	 BIT(50) | BIT(51) | BIT(52) | BIT(53))
/* tcx ingress/egress, netkit primary/peer: BPF_PROG_ATTACH by ifindex. */
#define IFINDEX_ATTACH_TYPES (BIT(46) | BIT(47) | BIT(54) | BIT(55))

/*
 * The user's registers, saved at the system call's entry (bpf_task_pt_regs):
 * at its exit they still hold the call's arguments. x86-64 passes the first
 * two in rdi and rsi; arm64 in x0 and x1, where x0 holds the return value by
 * the exit and orig_x0 keeps the first argument. Flavors: libbpf relocates
 * the one the running kernel has (bpf_core_field_exists picks it).
 */
struct pt_regs___x86 {
	unsigned long di;
	unsigned long si;
} CORE;

struct pt_regs___arm64 {
	__u64 regs[31];
	__u64 orig_x0;
} CORE;

/* The syscall tracepoints' records (tracefs events/syscalls/.../format). */
struct sys_exit_ctx {
	__u64 common;
	__s64 nr;
	__s64 ret;
};
