// SPDX-License-Identifier: Apache-2.0
/*
 * Programs at load: at the exit of BPF_PROG_LOAD, the new struct bpf_prog
 * behind the returned fd -- what bpf_prog_info would report, its functions'
 * JIT images and line info, its BTF once per BTF id.
 */
#pragma once

#include "send.h"

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
		count_lost();
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

/*
 * Every JIT'd function of the program `desc` names, func_cb over each:
 * desc->image_len and desc->failed say what went. A global function: the
 * verifier checks it, and the loop in it, once on its own, where in
 * capture_load the loop was checked again on every path to it. bpf_loop
 * needs its context on this function's own stack, hence the copy.
 */
__attribute__((noinline)) int send_funcs(struct func_ctx *desc, __u32 nr_funcs)
{
	struct func_ctx c;

	if (!desc)
		return 0;
	c = *desc;
	bpf_loop(nr_funcs, func_cb, &c, 0);
	desc->image_len = c.image_len;
	desc->failed = c.failed;
	return 0;
}

struct map_ctx {
	struct bpf_map **maps;
	__u32 id;
	__u32 failed;
};

/* ".rodata" and the zero byte after it, as a little-endian word. */
#define RODATA_WORD 0x00617461646f722eull
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "rodata_name reads little-endian words");

/*
 * Whether a map's 16-byte name, as its two little-endian words, ends in
 * ".rodata" (libbpf: `<obj>.rodata`): ".rodata" at some offset 0 to 9 with
 * a zero byte after it, or the last 7 bytes. The 8 bytes from each offset
 * are compared at once, the name read as if a zero byte followed it: one
 * branch per offset, where comparing byte by byte gave the verifier one
 * path per byte that matched at each offset.
 */
static __always_inline int rodata_name(__u64 lo, __u64 hi)
{
	if (lo == RODATA_WORD || hi == RODATA_WORD || hi >> 8 == RODATA_WORD)
		return 1;
#pragma unroll
	for (int at = 1; at < 8; at++) {
		if ((lo >> (8 * at) | hi << (64 - 8 * at)) == RODATA_WORD)
			return 1;
	}
	return 0;
}

/*
 * The value of `m`, a .rodata map (an array of one value with BTF), once per
 * map: its bpf_metadata_* variables for a program that may be unloaded
 * before user space could read them. At most CAPTURE_VALUE_MAX bytes.
 */
static __noinline int send_value(__u32 prog_id, struct bpf_map *m, __u64 name_lo, __u64 name_hi)
{
	struct capture_map_value *r;
	__u32 map_id, size, type_id, len;
	__u8 one = 1;

	if (!m || BPF_CORE_READ(m, map_type) != BPF_MAP_TYPE_ARRAY ||
	    BPF_CORE_READ(m, max_entries) != 1)
		return 0;
	type_id = BPF_CORE_READ(m, btf_value_type_id);
	if (!type_id || !rodata_name(name_lo, name_hi))
		return 0;
	map_id = BPF_CORE_READ(m, id);
	if (bpf_map_lookup_elem(&value_sent, &map_id))
		return 0;
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		count_lost();
		return -1;
	}
	size = BPF_CORE_READ(m, value_size);
	len = size;
	if (len > CAPTURE_VALUE_MAX)
		len = CAPTURE_VALUE_MAX;
	r->hdr.kind = CAPTURE_MAP_VALUE;
	r->hdr.id = prog_id;
	r->map_id = map_id;
	r->btf_id = BPF_CORE_READ(m, btf, id);
	r->btf_value_type_id = type_id;
	r->value_size = size;
	r->len = len;
	r->pad = 0;
	if (bpf_probe_read_kernel(r->data, len,
				  (void *)m + bpf_core_field_offset(struct bpf_array, value))) {
		struct capture_counters *n = count();

		if (n)
			__sync_fetch_and_add(&n->read_errors, 1);
		bpf_ringbuf_discard(r, BPF_RB_NO_WAKEUP);
		return -1;
	}
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	bpf_map_update_elem(&value_sent, &map_id, &one, BPF_ANY);
	return 0;
}

/*
 * Map `map` of program `prog_id`: its fields and where it lies; 0 when sent.
 * A global function, checked once by the verifier (with send_value, which
 * only it calls) where a static one was checked again at every call and at
 * every pass of the verifier over map_cb's loop. The map is passed as its
 * address: a global function's pointer arguments must point to memory the
 * verifier can size, and every read of it here is a probe read anyway.
 */
__attribute__((noinline)) int send_map(__u32 prog_id, __u32 index, __u64 map)
{
	struct bpf_map *m = (struct bpf_map *)map;
	struct capture_map *r;
	/* Its name, also as the two words rodata_name compares. */
	union {
		char s[16];
		__u64 w[2];
	} name;

	if (!m)
		return -1;
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		count_lost();
		return -1;
	}
	r->hdr.kind = CAPTURE_MAP;
	r->hdr.id = prog_id;
	r->index = index;
	r->map_id = BPF_CORE_READ(m, id);
	r->type = BPF_CORE_READ(m, map_type);
	r->key_size = BPF_CORE_READ(m, key_size);
	r->value_size = BPF_CORE_READ(m, value_size);
	r->max_entries = BPF_CORE_READ(m, max_entries);
	r->map_flags = BPF_CORE_READ(m, map_flags);
	r->pad = 0;
	r->addr = (__u64)m;
	/* BPF_MAP_TYPE_ARRAY's values follow its struct bpf_array header. */
	r->value_addr = r->type == BPF_MAP_TYPE_ARRAY
				? (__u64)m + bpf_core_field_offset(struct bpf_array, value)
				: 0;
	if (bpf_core_read(name.s, sizeof(name.s), &m->name)) {
		bpf_ringbuf_discard(r, BPF_RB_NO_WAKEUP);
		return -1;
	}
	__builtin_memcpy(r->name, name.s, sizeof(name.s));
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	/* After the map's record; a value that did not go is not the
	 * program's capture failing (user space reads the map by id). */
	send_value(prog_id, m, name.w[0], name.w[1]);
	return 0;
}

/* Map i of aux->used_maps. */
static long map_cb(__u32 i, void *arg)
{
	struct map_ctx *c = arg;
	struct bpf_map *m = 0;

	if (bpf_probe_read_kernel(&m, sizeof(m), &c->maps[i]) || send_map(c->id, i, (__u64)m)) {
		c->failed = 1;
		return 1;
	}
	return 0;
}

/*
 * The first `nr_maps` maps of aux->used_maps, map_cb over each; nonzero
 * when one did not go. Global, for the reason send_funcs is.
 */
__attribute__((noinline)) int send_maps(const struct map_ctx *desc, __u32 nr_maps)
{
	struct map_ctx c;

	if (!desc)
		return 0;
	c = *desc;
	bpf_loop(nr_maps, map_cb, &c, 0);
	return c.failed;
}

/* BPF_PROG_BIND_MAP succeeded: the map it bound, for the program's list.
 * attr->prog_bind_map: u32 prog_fd, u32 map_fd, u32 flags. */
static __always_inline int capture_bind_map(__u64 attr)
{
	__u32 fds[2] = {};
	struct bpf_prog *prog;
	struct file *file;

	if (bpf_probe_read_user(fds, sizeof(fds), (void *)attr))
		return 0;
	prog = fd_prog(fds[0]);
	file = fd_file(fds[1]);
	if (!prog || !file)
		return 0;
	send_map(BPF_CORE_READ(prog, aux, id), CAPTURE_MAP_BOUND,
		 (__u64)BPF_CORE_READ(file, private_data));
	return 0;
}

/*
 * The record of program `p`, last: the ring's one record that may wake the
 * recorder, and the counters; a program not captured whole also goes to
 * `missed`, which wakes it at once. A global function: `p` is capture_load's
 * record, on its stack, and the verifier assumes nothing of what it holds.
 * Inlined, the test of its flags made each path through capture_load (each
 * piece that went or failed sets them its own way) one the verifier could
 * not merge with the others, and it checked the rest of capture_load, loops
 * included, once per combination of flags.
 */
__attribute__((noinline)) int send_prog(const struct capture_prog *p)
{
	struct capture_counters *n = count();
	__u32 flags;
	__u64 wake;

	if (!p || !n)
		return 0;
	flags = p->flags;
	wake = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wake_at ? BPF_RB_FORCE_WAKEUP
									 : BPF_RB_NO_WAKEUP;
	if (bpf_ringbuf_output(&events, (void *)p, sizeof(*p), wake)) {
		__sync_fetch_and_add(&n->lost_records, 1);
		flags |= CAPTURE_INCOMPLETE;
	}
	if (flags & CAPTURE_INCOMPLETE) {
		struct capture_missed m = {
			.hdr = { .kind = CAPTURE_MISSED, .id = p->hdr.id },
			.cgroup_id = p->cgroup_id,
		};

		__sync_fetch_and_add(&n->incomplete, 1);
		bpf_ringbuf_output(&missed, &m, sizeof(m), BPF_RB_FORCE_WAKEUP);
	} else {
		__sync_fetch_and_add(&n->captured, 1);
	}
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
		send_funcs(&fc, p.nr_funcs);
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

	/* The maps it uses: ids, shapes and kernel addresses. */
	if (p.nr_map_ids) {
		struct map_ctx mc = { .maps = BPF_CORE_READ(aux, used_maps), .id = p.hdr.id };

		p.nr_maps = p.nr_map_ids < CAPTURE_MAPS_MAX ? p.nr_map_ids : CAPTURE_MAPS_MAX;
		if (!mc.maps)
			p.nr_maps = 0;
		if (send_maps(&mc, p.nr_maps))
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

	send_prog(&p);
	return 0;

not_program:
	__sync_fetch_and_add(&n->not_program, 1);
	return 0;
}
