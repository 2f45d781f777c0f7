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
 *   one CAPTURE_MAP per map it uses (aux->used_maps, in order),
 *   CAPTURE_PROG last: the scalar fields and what was sent. A program whose
 *     CAPTURE_PROG is missing or says CAPTURE_INCOMPLETE was not captured;
 *     its id then also goes into the small `missed` ring, which wakes the
 *     recorder (the `events` ring never does, unless it is half full).
 *
 * Per link created through BPF_LINK_CREATE or BPF_RAW_TRACEPOINT_OPEN, and
 * per program attached to a cgroup or an interface through BPF_PROG_ATTACH:
 * one CAPTURE_LINK at the syscall's exit. One the ring could not take goes
 * into `missed` as CAPTURE_MISSED_LINK (its link id; the recorder queries it).
 * Per map bound to a program by BPF_PROG_BIND_MAP: one CAPTURE_MAP with
 * index CAPTURE_MAP_BOUND at the syscall's exit.
 * After a CAPTURE_MAP of a `<obj>.rodata` map (an array of one value with
 * BTF), at the load or at BPF_PROG_BIND_MAP: one CAPTURE_MAP_VALUE with the
 * first CAPTURE_VALUE_MAX bytes of its value, once per map in the recording.
 * Per program run through BPF_PROG_TEST_RUN: one CAPTURE_TEST_RUN, the first
 * time in the recording.
 */
#ifndef BPFPROF_RECORD_BPF_CAPTURE_ABI_H
#define BPFPROF_RECORD_BPF_CAPTURE_ABI_H

#include <linux/types.h>

enum capture_kind {
	CAPTURE_PROG = 1,
	CAPTURE_FUNC = 2,
	CAPTURE_CHUNK = 3,
	CAPTURE_MISSED = 4, /* in the `missed` ring: a program not captured whole */
	CAPTURE_LINK = 5,   /* a link created, or a program attached without one */
	CAPTURE_MISSED_LINK = 6, /* in `missed`: a link whose CAPTURE_LINK did not fit */
	CAPTURE_TEST_RUN = 7, /* a program run by BPF_PROG_TEST_RUN (first run only) */
	CAPTURE_MAP = 8,      /* one map a program uses */
	CAPTURE_MAP_VALUE = 9, /* the value of a .rodata map, as the map was captured */
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
	__u32 nr_maps;        /* CAPTURE_MAP records sent (used_map_cnt, at most CAPTURE_MAPS_MAX) */
	__u32 sent[CAPTURE_NR_ARRAYS]; /* bytes sent per array */
	__u32 pad2;
	__u64 cgroup_id; /* the loading task's cgroup v2 id (bpf_get_current_cgroup_id) */
};

/* The kernel's MAX_USED_MAPS: no program uses more maps. */
#define CAPTURE_MAPS_MAX 64

/* CAPTURE_MAP index of a map BPF_PROG_BIND_MAP bound after the load. */
#define CAPTURE_MAP_BOUND 0xffffffffu

/* One map of a program (hdr.id: the program id), as struct bpf_map has it:
 * at the load, or when BPF_PROG_BIND_MAP binds one later (libbpf binds
 * .rodata maps to each program it loads). */
struct capture_map {
	struct capture_header hdr;
	__u32 index; /* in aux->used_maps; CAPTURE_MAP_BOUND: bound later */
	__u32 map_id;
	__u32 type;  /* enum bpf_map_type */
	__u32 key_size;
	__u32 value_size;
	__u32 max_entries;
	__u32 map_flags;
	__u32 pad;
	__u64 addr;       /* the struct bpf_map: what the JIT loads for a map reference */
	__u64 value_addr; /* an array map's first value (direct value access), else 0 */
	char name[16];
};

/* Most value bytes one CAPTURE_MAP_VALUE carries (a longer value is cut). */
#define CAPTURE_VALUE_MAX 512

/* The value (key 0) of a .rodata map, copied where CAPTURE_MAP found it
 * (hdr.id: the program the map was captured for). Its own kind, so a reader
 * that predates it skips it; `len` says how many bytes of `data` hold the
 * value and a reader rejects len > CAPTURE_VALUE_MAX or len > value_size. */
struct capture_map_value {
	struct capture_header hdr;
	__u32 map_id;
	__u32 btf_id;            /* the map's BTF (map->btf->id) */
	__u32 btf_value_type_id; /* its value's type in that BTF */
	__u32 value_size;        /* the whole value's size */
	__u32 len;               /* bytes of data[] copied: min(value_size, CAPTURE_VALUE_MAX) */
	__u32 pad;
	__u8 data[CAPTURE_VALUE_MAX];
};

/* CAPTURE_MISSED: a program not captured whole, and its loader's cgroup. */
struct capture_missed {
	struct capture_header hdr;
	__u64 cgroup_id;
};

/* CAPTURE_LINK flags. */
#define CAPTURE_LINK_NAMED 1u      /* the fields of its type are filled */
#define CAPTURE_LINK_PROG_ATTACH 2u /* BPF_PROG_ATTACH: no link (hdr.id 0) */
#define CAPTURE_LINK_TRACEPOINT 4u /* perf_event link of a tracepoint (name, category) */

#define CAPTURE_NAME_MAX 64
#define CAPTURE_CATEGORY_MAX 32
#define CAPTURE_IFNAME_MAX 16

/*
 * One attachment. What names the point, per link type: raw_tp and a
 * perf_event tracepoint: name (and category); tracing: attach_type, target
 * (BTF object id, BTF type id); cgroup: cgroup_id, attach_type; netns:
 * netns_ino, attach_type; xdp: ifindex, ifname, netns_ino, xdp_mode
 * (0 generic, 1 driver, 2 offload); tcx: ifindex, ifname, netns_ino,
 * attach_type. Without CAPTURE_LINK_NAMED only the ids are meaningful.
 * BPF_PROG_ATTACH: cgroup_id (a cgroup attach type) or ifindex and the
 * caller's netns_ino (tcx, netkit).
 */
struct capture_link {
	struct capture_header hdr; /* id: the link id (0 with CAPTURE_LINK_PROG_ATTACH) */
	__u32 prog_id;
	__u32 link_type;   /* enum bpf_link_type (0 with CAPTURE_LINK_PROG_ATTACH) */
	__u32 attach_type; /* enum bpf_attach_type */
	__u32 flags;
	__u64 time;        /* bpf_ktime_get_ns() at the syscall's exit */
	__u64 cgroup_id;
	__u32 ifindex;
	__u32 netns_ino;
	__u32 xdp_mode;
	__u32 target_obj_id;
	__u32 target_btf_id;
	__u32 pad;
	char name[CAPTURE_NAME_MAX];
	char category[CAPTURE_CATEGORY_MAX];
	char ifname[CAPTURE_IFNAME_MAX];
};

/* A program run by BPF_PROG_TEST_RUN during the recording (hdr.id: its id). */
struct capture_test_run {
	struct capture_header hdr;
	__u64 time; /* bpf_ktime_get_ns() of its first run seen */
};

/* Per-CPU counters of the capture programs (the recorder sums them). */
struct capture_counters {
	__u64 captured;     /* CAPTURE_PROG records sent complete */
	__u64 incomplete;   /* programs with a piece the ring could not take */
	__u64 lost_records; /* ring reservations that failed */
	__u64 not_program;  /* the returned fd no longer named the new program */
	__u64 read_errors;  /* kernel reads that failed */
	__u64 links;        /* CAPTURE_LINK records sent */
	__u64 links_missed; /* links whose record the ring could not take */
};

#endif
