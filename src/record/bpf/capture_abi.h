/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The records capture.bpf.c writes into its BPF ring buffer, shared by the
 * BPF program (C, clang -target bpf) and the recorder (C++). All little
 * endian, fixed-size fields, no pointers of user space.
 *
 * Per program loaded through BPF_PROG_LOAD, in this order on one CPU:
 *   one CAPTURE_FUNC per JIT'd function (main first, then aux->func[]),
 *   CAPTURE_CHUNK records for each array (bounded pieces, in offset order),
 *   CAPTURE_CHUNK records of the program's BTF when this BTF id was not yet
 *     sent during the recording,
 *   CAPTURE_PROG last: the scalar fields and what was sent. A program whose
 *     CAPTURE_PROG is missing or says CAPTURE_INCOMPLETE was not captured;
 *     its id then also goes into the small `missed` ring, which wakes the
 *     recorder (the `events` ring never does, unless it is half full).
 */
#ifndef BPFPROF_RECORD_BPF_CAPTURE_ABI_H
#define BPFPROF_RECORD_BPF_CAPTURE_ABI_H

#include <linux/types.h>

enum capture_kind {
	CAPTURE_PROG = 1,
	CAPTURE_FUNC = 2,
	CAPTURE_CHUNK = 3,
	CAPTURE_MISSED = 4, /* in the `missed` ring: a program not captured whole */
};

/* Which array a CAPTURE_CHUNK belongs to. */
enum capture_array {
	CAPTURE_JITED_INSNS = 0, /* the JIT images of all functions back to back */
	CAPTURE_FUNC_INFO = 1,   /* aux->func_info, struct bpf_func_info each */
	CAPTURE_LINE_INFO = 2,   /* aux->linfo, struct bpf_line_info each */
	CAPTURE_JITED_LINE_INFO = 3, /* aux->jited_linfo, one u64 address each */
	CAPTURE_BTF = 4,         /* the program BTF's raw data (id: the BTF id) */
	CAPTURE_NR_ARRAYS = 5,
};

/* Largest payload of one CAPTURE_CHUNK; arrays are cut in pieces this size. */
#define CAPTURE_CHUNK_MAX 8192

/* CAPTURE_PROG flags. */
#define CAPTURE_INCOMPLETE 1u   /* a piece did not fit in the ring: not captured */
#define CAPTURE_GPL 2u          /* gpl_compatible */
#define CAPTURE_BTF_SENT 4u     /* this program's record sent its BTF's chunks */

struct capture_header {
	__u32 kind;
	__u32 id; /* program id (BTF id for CAPTURE_BTF chunks) */
};

struct capture_func {
	struct capture_header hdr;
	__u32 index;
	__u32 jited_len;
	__u64 addr; /* bpf_func: the function's JIT address */
	__u8 tag[8];
};

struct capture_chunk {
	struct capture_header hdr;
	__u32 array;  /* enum capture_array */
	__u32 offset; /* byte offset in the array */
	__u32 len;    /* payload bytes that follow (the record may be longer) */
	__u32 prog_id; /* the program this piece was sent for */
	/* __u8 data[len] follows */
};

struct capture_prog {
	struct capture_header hdr;
	__u32 flags;
	__u32 type;
	__u8 tag[8];
	char name[16];
	__u64 load_time; /* aux->load_time: boot-time ns, as bpf_prog_info reports */
	__u32 created_by_uid;
	__u32 jited_prog_len;
	__u32 xlated_prog_len;
	__u32 nr_map_ids;
	__u32 btf_id;
	__u32 nr_func_info;
	__u32 nr_line_info;
	__u32 nr_jited_line_info;
	__u32 verified_insns;
	__u32 attach_btf_obj_id;
	__u32 attach_btf_id;
	__u32 nr_funcs;       /* CAPTURE_FUNC records sent */
	__u32 btf_size;       /* bytes of BTF sent (0: not sent by this program) */
	__u32 pad;
	__u32 sent[CAPTURE_NR_ARRAYS]; /* bytes sent per array */
	__u32 pad2;
};

/* Per-CPU counters of the capture programs (the recorder sums them). */
struct capture_counters {
	__u64 captured;     /* CAPTURE_PROG records sent complete */
	__u64 incomplete;   /* programs with a piece the ring could not take */
	__u64 lost_records; /* ring reservations that failed */
	__u64 not_program;  /* the returned fd no longer named the new program */
	__u64 read_errors;  /* kernel reads that failed */
};

#endif
