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
} CORE;

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

/* Threads inside BPF_PROG_LOAD, by pid_tgid. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u8);
} loading SEC(".maps");

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

SEC("tracepoint/syscalls/sys_enter_bpf")
int capture_enter(struct sys_enter_ctx *ctx)
{
	__u64 key;
	__u8 one = 1;

	if (ctx->args[0] != BPF_PROG_LOAD)
		return 0;
	key = bpf_get_current_pid_tgid();
	bpf_map_update_elem(&loading, &key, &one, BPF_ANY);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_bpf")
int capture_exit(struct sys_exit_ctx *ctx)
{
	__u64 key = bpf_get_current_pid_tgid();
	struct capture_counters *n;
	struct bpf_prog_aux *aux;
	struct bpf_prog *prog;
	struct capture_prog p = {};
	struct fdtable *fdt;
	struct file **fds;
	struct file *file;
	struct btf *btf;
	void **jited_linfo;
	__s64 fd = ctx->ret;
	__u32 func_cnt, nr_linfo, nr_func_info;
	__u64 wake;

	if (!bpf_map_lookup_elem(&loading, &key))
		return 0;
	bpf_map_delete_elem(&loading, &key);
	if (fd < 0)
		return 0;
	n = count();
	if (!n)
		return 0;

	/* The fd the load returned, in the loading thread's file table. */
	fdt = BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), files, fdt);
	if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds))
		goto not_program;
	fds = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]) || !file)
		goto not_program;
	prog = BPF_CORE_READ(file, private_data);
	aux = BPF_CORE_READ(prog, aux);
	/* Another thread may have closed it and opened something else there. */
	if (!aux || BPF_CORE_READ(aux, prog) != prog)
		goto not_program;

	p.hdr.kind = CAPTURE_PROG;
	p.hdr.id = BPF_CORE_READ(aux, id);
	p.type = BPF_CORE_READ(prog, type);
	if (BPF_CORE_READ_BITFIELD_PROBED(prog, gpl_compatible))
		p.flags |= CAPTURE_GPL;
	bpf_core_read(p.tag, sizeof(p.tag), &prog->tag);
	bpf_core_read(p.name, sizeof(p.name), &aux->name);
	p.load_time = BPF_CORE_READ(aux, load_time);
	p.created_by_uid = (__u32)bpf_get_current_uid_gid();
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
		struct capture_header m = { .kind = CAPTURE_MISSED, .id = p.hdr.id };

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

char LICENSE[] SEC("license") = "GPL";
