// SPDX-License-Identifier: Apache-2.0
/*
 * What every capture shares: the rings and maps, the counters, sending a
 * variable-length array in pieces, and the file or program behind an fd of
 * the current thread.
 */
#pragma once

#include "capture_abi.h"
#include "kernel_types.h"

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

/* Maps whose CAPTURE_MAP_VALUE this recording has sent (.rodata values are
 * frozen by their loader: one copy is the value). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} value_sent SEC(".maps");

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

/* Counts one record the ring had no room for. */
static __always_inline void count_lost(void)
{
	struct capture_counters *n = count();

	if (n)
		__sync_fetch_and_add(&n->lost_records, 1);
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

/*
 * Sends the `desc->total` bytes at `desc->src` as pieces of `desc->array`; 0
 * when all went. A global function, not inlined: the verifier checks it,
 * and the loop over piece_cb in it, once on its own, where inlined the loop
 * was checked again at each of its five call sites, on every path to them
 * and on each pass over func_cb's loop. It takes the description of the
 * array by pointer, a global function having at most five arguments; the
 * verifier assumes nothing of what it holds, and bpf_loop needs its context
 * on this function's own stack, hence the copy.
 */
__attribute__((noinline)) int send_pieces(const struct piece_ctx *desc)
{
	struct piece_ctx c;

	if (!desc)
		return 0;
	c = *desc;
	c.failed = 0;
	if (!c.total || !c.src)
		return 0;
	bpf_loop((c.total + CAPTURE_CHUNK_MAX - 1) / CAPTURE_CHUNK_MAX, piece_cb, &c, 0);
	return c.failed ? -1 : 0;
}

/* Sends `total` bytes at `src` as pieces of `array`; 0 when all went. */
static __always_inline int send_array(const void *src, __u32 total, __u32 array, __u32 id,
				      __u32 prog_id, __u32 base)
{
	struct piece_ctx c = {
		.src = src, .total = total, .array = array, .id = id, .prog_id = prog_id, .base = base,
	};

	return send_pieces(&c);
}


/*
 * The file behind `fd` in the current thread's table. From the task's BTF
 * pointer the table is reached by loads the verifier checks (a fault reads
 * 0) instead of a helper call each: BPF_PROG_TEST_RUN pays this walk on
 * every call. The slot itself, an index into an array of pointers, is read
 * by the helper.
 */
static __always_inline struct file *fd_file(__s64 fd)
{
	struct fdtable *fdt = bpf_get_current_task_btf()->files->fdt;
	struct file *file = 0;

	if (!fdt || fd < 0 || fd >= fdt->max_fds)
		return 0;
	if (bpf_probe_read_kernel(&file, sizeof(file), &fdt->fd[fd]))
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
