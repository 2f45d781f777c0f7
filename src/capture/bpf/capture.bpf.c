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
 * run (once per program).
 *
 * Kernel types are declared here with only the fields read, marked
 * preserve_access_index: libbpf relocates every access against the running
 * kernel's BTF at load (CO-RE), so the object builds anywhere.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "capture_abi.h"

#define CORE __attribute__((preserve_access_index))

struct btf {
	void *data;
	__u32 data_size;
	__u32 id;
} CORE;

struct bpf_prog;

struct bpf_prog_aux {
	__u32 used_map_cnt;
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

/* The attach types of cgroup hooks (enum bpf_attach_type), as a bit mask. */
#define BIT(n) (1ull << (n))
#define CGROUP_ATTACH_TYPES                                                                   \
	(BIT(0) | BIT(1) | BIT(2) | BIT(3) | BIT(6) | BIT(8) | BIT(9) | BIT(10) | BIT(11) |   \
	 BIT(12) | BIT(13) | BIT(14) | BIT(15) | BIT(18) | BIT(19) | BIT(20) | BIT(21) |      \
	 BIT(22) | BIT(29) | BIT(30) | BIT(31) | BIT(32) | BIT(34) | BIT(43) | BIT(49) |      \
	 BIT(50) | BIT(51) | BIT(52) | BIT(53))
/* tcx ingress/egress, netkit primary/peer: BPF_PROG_ATTACH by ifindex. */
#define IFINDEX_ATTACH_TYPES (BIT(46) | BIT(47) | BIT(54) | BIT(55))

/* The syscall tracepoints' records (tracefs events/syscalls/.../format). */
struct sys_enter_ctx {
	__u64 common;
	__s64 nr;
	__u64 args[6];
};

struct sys_exit_ctx {
	__u64 common;
	__s64 nr;
	__s64 ret;
};


struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20); /* the recorder sets the size before load */
} events SEC(".maps");

/*
 * Ids of programs whose capture did not fit in `events`: the one record that
 * wakes the recorder at once, so it can enrich them by id while they are
 * likely still loaded. Rare by construction (see wake_at).
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} missed SEC(".maps");

/*
 * Bytes waiting in `events` from which a program's last record wakes the
 * recorder (set to half the ring before load): the ring is drained on the
 * recorder's cadence and only a burst of loads that could fill it wakes it.
 */
const volatile __u64 wake_at = 2 << 20;

/* A thread inside a bpf() command captured at its exit. */
struct pending_cmd {
	__u32 cmd;
	__u32 pad;
	__u64 attr; /* the user's union bpf_attr */
};

/* Threads inside a captured command, by pid_tgid. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct pending_cmd);
} pending SEC(".maps");

/* Programs whose BPF_PROG_TEST_RUN this recording has sent. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u8);
} test_run_sent SEC(".maps");

/* BTF ids whose data this recording has sent. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} btf_sent SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct capture_counters);
} counters SEC(".maps");

static __always_inline struct capture_counters *count(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&counters, &zero);
}

/* One array being sent in pieces. */
struct piece_ctx {
	const __u8 *src;
	__u32 total;
	__u32 array;
	__u32 id;
	__u32 prog_id;
	__u32 base; /* offset of src within the array */
	__u32 failed;
};

/* Sends src[off, off+len) as one record of the smallest size class that holds it. */
#define SEND_CLASS(SIZE)                                                          \
	if (len <= SIZE) {                                                        \
		struct {                                                          \
			struct capture_chunk h;                                   \
			__u8 data[SIZE];                                          \
		} *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);              \
		if (!r)                                                           \
			return -1;                                                \
		r->h.hdr.kind = CAPTURE_CHUNK;                                    \
		r->h.hdr.id = c->id;                                              \
		r->h.array = c->array;                                            \
		r->h.offset = c->base + off;                                      \
		r->h.len = len;                                                   \
		r->h.prog_id = c->prog_id;                                        \
		if (bpf_probe_read_kernel(r->data, len, c->src + off)) {          \
			bpf_ringbuf_discard(r, BPF_RB_NO_WAKEUP);                 \
			return -2;                                                \
		}                                                                 \
		bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);                          \
		return 0;                                                         \
	}

static __always_inline int send_piece(struct piece_ctx *c, __u64 off, __u64 len)
{
	SEND_CLASS(128)
	SEND_CLASS(512)
	SEND_CLASS(2048)
	SEND_CLASS(CAPTURE_CHUNK_MAX)
	return -2;
}

static long piece_cb(__u32 i, void *arg)
{
	struct piece_ctx *c = arg;
	__u64 off = (__u64)i * CAPTURE_CHUNK_MAX;
	__u64 len;
	int err;

	if (off >= c->total)
		return 1;
	len = c->total - off;
	if (len > CAPTURE_CHUNK_MAX)
		len = CAPTURE_CHUNK_MAX;
	err = send_piece(c, off, len);
	if (err) {
		struct capture_counters *n = count();

		if (n && err == -1)
			__sync_fetch_and_add(&n->lost_records, 1);
		if (n && err == -2)
			__sync_fetch_and_add(&n->read_errors, 1);
		c->failed = 1;
		return 1;
	}
	return 0;
}

/* Sends `total` bytes at `src` as pieces of `array`; 0 when all went. */
static __always_inline int send_array(const void *src, __u32 total, __u32 array, __u32 id,
				      __u32 prog_id, __u32 base)
{
	struct piece_ctx c = {
		.src = src, .total = total, .array = array, .id = id, .prog_id = prog_id, .base = base,
	};

	if (!total || !src)
		return 0;
	bpf_loop((total + CAPTURE_CHUNK_MAX - 1) / CAPTURE_CHUNK_MAX, piece_cb, &c, 0);
	return c.failed ? -1 : 0;
}

struct func_ctx {
	struct bpf_prog *prog;
	struct bpf_prog **funcs; /* NULL: the program is its only function */
	__u32 id;
	__u32 image_len; /* bytes of JIT image sent so far */
	__u32 failed;
};

static long func_cb(__u32 i, void *arg)
{
	struct func_ctx *c = arg;
	struct bpf_prog *f = c->prog;
	struct capture_func *r;
	void *image;
	__u32 len;

	if (c->funcs && bpf_probe_read_kernel(&f, sizeof(f), &c->funcs[i])) {
		c->failed = 1;
		return 1;
	}
	image = BPF_CORE_READ(f, bpf_func);
	len = BPF_CORE_READ(f, jited_len);
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		struct capture_counters *n = count();

		if (n)
			__sync_fetch_and_add(&n->lost_records, 1);
		c->failed = 1;
		return 1;
	}
	r->hdr.kind = CAPTURE_FUNC;
	r->hdr.id = c->id;
	r->index = i;
	r->jited_len = len;
	r->addr = (__u64)image;
	if (bpf_core_read(r->tag, sizeof(r->tag), &f->tag)) {
		bpf_ringbuf_discard(r, BPF_RB_NO_WAKEUP);
		c->failed = 1;
		return 1;
	}
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	if (send_array(image, len, CAPTURE_JITED_INSNS, c->id, c->id, c->image_len)) {
		c->failed = 1;
		return 1;
	}
	c->image_len += len;
	return 0;
}

/* The file behind `fd` in the current thread's file table, or NULL. */
static __always_inline struct file *fd_file(__s64 fd)
{
	struct fdtable *fdt = BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), files, fdt);
	struct file **fds;
	struct file *file = 0;

	if (!fdt || fd < 0 || fd >= BPF_CORE_READ(fdt, max_fds))
		return 0;
	fds = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]))
		return 0;
	return file;
}

/* The program behind `fd`, or NULL when it is not one (checked through its aux). */
static __always_inline struct bpf_prog *fd_prog(__s64 fd)
{
	struct file *file = fd_file(fd);
	struct bpf_prog *prog;

	if (!file)
		return 0;
	prog = BPF_CORE_READ(file, private_data);
	if (!prog || BPF_CORE_READ(prog, aux, prog) != prog)
		return 0;
	return prog;
}

SEC("tracepoint/syscalls/sys_enter_bpf")
int capture_enter(struct sys_enter_ctx *ctx)
{
	struct pending_cmd p = { .cmd = ctx->args[0], .attr = ctx->args[1] };
	__u64 key;

	if (p.cmd == CMD_PROG_TEST_RUN) {
		struct capture_test_run t = { .hdr = { .kind = CAPTURE_TEST_RUN } };
		struct capture_counters *n;
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
			n = count();
			if (n)
				__sync_fetch_and_add(&n->lost_records, 1);
			return 0;
		}
		bpf_map_update_elem(&test_run_sent, &t.hdr.id, &one, BPF_ANY);
		return 0;
	}
	if (p.cmd != CMD_PROG_LOAD && p.cmd != CMD_LINK_CREATE && p.cmd != CMD_RAW_TRACEPOINT_OPEN &&
	    p.cmd != CMD_PROG_ATTACH)
		return 0;
	key = bpf_get_current_pid_tgid();
	bpf_map_update_elem(&pending, &key, &p, BPF_ANY);
	return 0;
}

/* BPF_PROG_LOAD returned `fd`: the new program, copied out. */
static __always_inline int capture_load(__s64 fd)
{
	struct capture_counters *n;
	struct bpf_prog_aux *aux;
	struct bpf_prog *prog;
	struct capture_prog p = {};
	struct btf *btf;
	void **jited_linfo;
	__u32 func_cnt, nr_linfo, nr_func_info;
	__u64 wake;

	n = count();
	if (!n)
		return 0;
	/* The fd the load returned, in the loading thread's file table.
	 * Another thread may have closed it and opened something else there. */
	prog = fd_prog(fd);
	if (!prog)
		goto not_program;
	aux = BPF_CORE_READ(prog, aux);

	p.hdr.kind = CAPTURE_PROG;
	p.hdr.id = BPF_CORE_READ(aux, id);
	p.type = BPF_CORE_READ(prog, type);
	if (BPF_CORE_READ_BITFIELD_PROBED(prog, gpl_compatible))
		p.flags |= CAPTURE_GPL;
	bpf_core_read(p.tag, sizeof(p.tag), &prog->tag);
	bpf_core_read(p.name, sizeof(p.name), &aux->name);
	p.load_time = BPF_CORE_READ(aux, load_time);
	p.created_by_uid = (__u32)bpf_get_current_uid_gid();
	/* The loader's cgroup (v2), here where the loading task is current. */
	p.cgroup_id = bpf_get_current_cgroup_id();
	p.xlated_prog_len = BPF_CORE_READ(prog, len) * sizeof(struct bpf_insn);
	p.nr_map_ids = BPF_CORE_READ(aux, used_map_cnt);
	p.verified_insns = BPF_CORE_READ(aux, verified_insns);
	p.attach_btf_id = BPF_CORE_READ(aux, attach_btf_id);
	p.attach_btf_obj_id = BPF_CORE_READ(aux, attach_btf, id);

	/* Every JIT'd function: address, length, tag, image. */
	func_cnt = BPF_CORE_READ(aux, func_cnt);
	if (BPF_CORE_READ_BITFIELD_PROBED(prog, jited)) {
		struct func_ctx fc = {
			.prog = prog,
			.funcs = func_cnt ? BPF_CORE_READ(aux, func) : 0,
			.id = p.hdr.id,
		};

		p.nr_funcs = func_cnt ? func_cnt : 1;
		bpf_loop(p.nr_funcs, func_cb, &fc, 0);
		if (fc.failed)
			p.flags |= CAPTURE_INCOMPLETE;
		p.jited_prog_len = fc.image_len;
		p.sent[CAPTURE_JITED_INSNS] = fc.image_len;
	}

	nr_func_info = BPF_CORE_READ(aux, func_info_cnt);
	p.nr_func_info = nr_func_info;
	p.sent[CAPTURE_FUNC_INFO] = nr_func_info * sizeof(struct bpf_func_info);
	if (send_array(BPF_CORE_READ(aux, func_info), p.sent[CAPTURE_FUNC_INFO],
		       CAPTURE_FUNC_INFO, p.hdr.id, p.hdr.id, 0))
		p.flags |= CAPTURE_INCOMPLETE;

	nr_linfo = BPF_CORE_READ(aux, nr_linfo);
	p.nr_line_info = nr_linfo;
	p.sent[CAPTURE_LINE_INFO] = nr_linfo * sizeof(struct bpf_line_info);
	if (send_array(BPF_CORE_READ(aux, linfo), p.sent[CAPTURE_LINE_INFO], CAPTURE_LINE_INFO,
		       p.hdr.id, p.hdr.id, 0))
		p.flags |= CAPTURE_INCOMPLETE;

	jited_linfo = BPF_CORE_READ(aux, jited_linfo);
	if (jited_linfo) {
		p.nr_jited_line_info = nr_linfo;
		p.sent[CAPTURE_JITED_LINE_INFO] = nr_linfo * sizeof(__u64);
		if (send_array(jited_linfo, p.sent[CAPTURE_JITED_LINE_INFO], CAPTURE_JITED_LINE_INFO,
			       p.hdr.id, p.hdr.id, 0))
			p.flags |= CAPTURE_INCOMPLETE;
	}

	/* The program's BTF, once per BTF id in the recording. */
	btf = BPF_CORE_READ(aux, btf);
	if (btf) {
		__u32 btf_id = BPF_CORE_READ(btf, id);

		p.btf_id = btf_id;
		if (!bpf_map_lookup_elem(&btf_sent, &btf_id)) {
			__u32 size = BPF_CORE_READ(btf, data_size);
			__u8 one = 1;

			if (send_array(BPF_CORE_READ(btf, data), size, CAPTURE_BTF, btf_id, p.hdr.id, 0)) {
				p.flags |= CAPTURE_INCOMPLETE;
			} else {
				p.flags |= CAPTURE_BTF_SENT;
				p.btf_size = size;
				p.sent[CAPTURE_BTF] = size;
				bpf_map_update_elem(&btf_sent, &btf_id, &one, BPF_ANY);
			}
		}
	}

	wake = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wake_at ? BPF_RB_FORCE_WAKEUP
									 : BPF_RB_NO_WAKEUP;
	if (bpf_ringbuf_output(&events, &p, sizeof(p), wake)) {
		__sync_fetch_and_add(&n->lost_records, 1);
		p.flags |= CAPTURE_INCOMPLETE;
	}
	if (p.flags & CAPTURE_INCOMPLETE) {
		struct capture_missed m = {
			.hdr = { .kind = CAPTURE_MISSED, .id = p.hdr.id },
			.cgroup_id = p.cgroup_id,
		};

		__sync_fetch_and_add(&n->incomplete, 1);
		bpf_ringbuf_output(&missed, &m, sizeof(m), BPF_RB_FORCE_WAKEUP);
	} else {
		__sync_fetch_and_add(&n->captured, 1);
	}
	return 0;

not_program:
	__sync_fetch_and_add(&n->not_program, 1);
	return 0;
}

/* A zeroed CAPTURE_LINK in the ring for link `id` (0: BPF_PROG_ATTACH), or
 * NULL, counted, and the link id sent to `missed` for a query by id. */
static __always_inline struct capture_link *new_link_record(__u32 id, __u32 prog_id)
{
	struct capture_counters *n = count();
	struct capture_link *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);

	if (!r) {
		struct capture_header m = { .kind = CAPTURE_MISSED_LINK, .id = id };

		if (n) {
			__sync_fetch_and_add(&n->lost_records, 1);
			__sync_fetch_and_add(&n->links_missed, 1);
		}
		if (id)
			bpf_ringbuf_output(&missed, &m, sizeof(m), BPF_RB_FORCE_WAKEUP);
		return 0;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->hdr.kind = CAPTURE_LINK;
	r->hdr.id = id;
	r->prog_id = prog_id;
	r->time = bpf_ktime_get_ns();
	return r;
}

static __always_inline void submit_link_record(struct capture_link *r)
{
	struct capture_counters *n = count();

	if (n)
		__sync_fetch_and_add(&n->links, 1);
	bpf_ringbuf_submit(r, bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wake_at
				      ? BPF_RB_FORCE_WAKEUP
				      : BPF_RB_NO_WAKEUP);
}

/* An interface: index, name, network namespace. */
static __always_inline int name_device(struct net_device *dev, struct capture_link *r)
{
	if (!dev)
		return 0;
	r->ifindex = BPF_CORE_READ(dev, ifindex);
	r->netns_ino = BPF_CORE_READ(dev, nd_net.net, ns.inum);
	bpf_core_read(r->ifname, sizeof(r->ifname), &dev->name);
	r->ifname[sizeof(r->ifname) - 1] = 0;
	return r->ifindex != 0;
}

/* Fills what names the point of `link` of `type`; 1 when named. */
static __always_inline int name_link(struct bpf_link *link, __u32 type, struct bpf_prog *prog,
				     struct capture_link *r)
{
	int has_attach_type = bpf_core_field_exists(link->attach_type);

	if (has_attach_type)
		r->attach_type = BPF_CORE_READ(link, attach_type);
	switch (type) {
	case LINK_RAW_TRACEPOINT: {
		const char *name = BPF_CORE_READ((struct bpf_raw_tp_link *)link, btp, tp, name);

		return name && bpf_probe_read_kernel_str(r->name, sizeof(r->name), name) > 1;
	}
	case LINK_TRACING:
		/* fentry, fexit, fmod_ret, lsm, tp_btf: the program's target;
		 * freplace (and older kernels) by id */
		if (!has_attach_type || r->attach_type < 23 || r->attach_type > 27)
			return 0;
		r->target_obj_id = BPF_CORE_READ(prog, aux, attach_btf, id);
		r->target_btf_id = BPF_CORE_READ(prog, aux, attach_btf_id);
		return r->target_btf_id != 0;
	case LINK_CGROUP:
		r->cgroup_id = BPF_CORE_READ((struct bpf_cgroup_link *)link, cgroup, kn, id);
		return has_attach_type && r->cgroup_id;
	case LINK_NETNS:
		r->netns_ino = BPF_CORE_READ((struct bpf_netns_link *)link, net, ns.inum);
		return has_attach_type && r->netns_ino;
	case LINK_XDP: {
		struct net_device *dev = BPF_CORE_READ((struct bpf_xdp_link *)link, dev);
		struct bpf_xdp_link *held = 0;

		if (!name_device(dev, r))
			return 0;
		/* The mode is the slot of the device that holds this link. */
		r->xdp_mode = 1;
		for (int i = 0; i < 3; i++) {
			if (!bpf_core_read(&held, sizeof(held), &dev->xdp_state[i].link) &&
			    held == (struct bpf_xdp_link *)link)
				r->xdp_mode = i;
		}
		return 1;
	}
	case LINK_PERF_EVENT: {
		struct perf_event *ev = BPF_CORE_READ((struct bpf_perf_link *)link, perf_file, private_data);
		struct trace_event_call *call = BPF_CORE_READ(ev, tp_event);
		const char *name;
		int flags;

		/* a plain event, a kprobe or uprobe: by id */
		if (!call)
			return 0;
		flags = BPF_CORE_READ(call, flags);
		if (flags & TRACE_EVENT_FL_PROBES)
			return 0;
		name = flags & TRACE_EVENT_FL_TRACEPOINT ? BPF_CORE_READ(call, tp, name)
							 : BPF_CORE_READ(call, name);
		if (!name || bpf_probe_read_kernel_str(r->name, sizeof(r->name), name) <= 1)
			return 0;
		bpf_probe_read_kernel_str(r->category, sizeof(r->category),
					  BPF_CORE_READ(call, class, system));
		r->flags |= CAPTURE_LINK_TRACEPOINT;
		return 1;
	}
	case LINK_TCX:
		if (!bpf_core_type_exists(struct tcx_link))
			return 0;
		return has_attach_type && name_device(BPF_CORE_READ((struct tcx_link *)link, dev), r);
	default:
		return 0;
	}
}

/* BPF_LINK_CREATE or BPF_RAW_TRACEPOINT_OPEN returned `fd`: the new link. */
static __always_inline int capture_link(__s64 fd)
{
	struct file *file = fd_file(fd);
	struct bpf_link *link = file ? BPF_CORE_READ(file, private_data) : 0;
	struct bpf_prog *prog = BPF_CORE_READ(link, prog);
	__u32 id = BPF_CORE_READ(link, id);
	struct capture_counters *n;
	struct capture_link *r;

	if (!link || !prog || !id || BPF_CORE_READ(prog, aux, prog) != prog) {
		n = count();
		if (n)
			__sync_fetch_and_add(&n->not_program, 1);
		return 0;
	}
	r = new_link_record(id, BPF_CORE_READ(prog, aux, id));
	if (!r)
		return 0;
	r->link_type = BPF_CORE_READ(link, type);
	if (name_link(link, r->link_type, prog, r))
		r->flags |= CAPTURE_LINK_NAMED;
	submit_link_record(r);
	return 0;
}

/* The fields of BPF_PROG_ATTACH's attr read here (uapi, stable). */
struct prog_attach_attr {
	__u32 target; /* target_fd, or target_ifindex */
	__u32 attach_bpf_fd;
	__u32 attach_type;
};

/* BPF_PROG_ATTACH succeeded: the program and, for a cgroup, its id; for
 * tcx or netkit, the interface index in the caller's network namespace. */
static __always_inline int capture_prog_attach(__u64 uattr)
{
	struct prog_attach_attr a = {};
	struct capture_link *r;
	struct kernfs_node *kn;
	struct bpf_prog *prog;
	struct file *target;
	__u32 prog_id;

	if (bpf_probe_read_user(&a, sizeof(a), (void *)uattr) || a.attach_type >= 64)
		return 0;
	prog = fd_prog(a.attach_bpf_fd);
	prog_id = BPF_CORE_READ(prog, aux, id);
	if (!prog_id)
		return 0;
	if (CGROUP_ATTACH_TYPES & BIT(a.attach_type)) {
		target = fd_file(a.target);
		kn = target ? BPF_CORE_READ(target, f_inode, i_private) : 0;
		if (!kn)
			return 0;
		r = new_link_record(0, prog_id);
		if (!r)
			return 0;
		r->cgroup_id = BPF_CORE_READ(kn, id);
	} else if (IFINDEX_ATTACH_TYPES & BIT(a.attach_type)) {
		r = new_link_record(0, prog_id);
		if (!r)
			return 0;
		r->ifindex = a.target;
		r->netns_ino = BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), nsproxy,
					     net_ns, ns.inum);
	} else {
		return 0; /* sockmap, flow dissector, lirc...: not captured */
	}
	r->attach_type = a.attach_type;
	r->flags = CAPTURE_LINK_PROG_ATTACH | CAPTURE_LINK_NAMED;
	submit_link_record(r);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_bpf")
int capture_exit(struct sys_exit_ctx *ctx)
{
	__u64 key = bpf_get_current_pid_tgid();
	struct pending_cmd *w = bpf_map_lookup_elem(&pending, &key);
	struct pending_cmd p;

	if (!w)
		return 0;
	p = *w;
	bpf_map_delete_elem(&pending, &key);
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
	default:
		return 0;
	}
}

char LICENSE[] SEC("license") = "GPL";
