// SPDX-License-Identifier: Apache-2.0
/*
 * Attachments: at the exit of BPF_LINK_CREATE and BPF_RAW_TRACEPOINT_OPEN
 * the new struct bpf_link behind the returned fd (its id, type, program and
 * what names its point); at the exit of BPF_PROG_ATTACH to a cgroup or an
 * interface, the program and the target.
 */
#pragma once

#include "send.h"

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
