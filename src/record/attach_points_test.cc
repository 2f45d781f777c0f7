// SPDX-License-Identifier: Apache-2.0
// Attach points as a user writes them, from bpf_link_info fields and what the
// recorder resolved at the same time (cgroup paths, interfaces, namespaces,
// tracepoint categories). The live scan is checked by the kernel test
// (tests/kernel/attach_test.cc).
#include "record/attach_points.h"

#include <gtest/gtest.h>

namespace bpfprof::record {
namespace {

bpf::LinkInfo link(uint32_t type, uint32_t prog = 5) {
  bpf::LinkInfo l;
  l.id = 1;
  l.type = type;
  l.prog_id = prog;
  return l;
}

TEST(AttachPointsTest, LinksThatNameThemselves) {
  AttachContext ctx;
  bpf::LinkInfo raw = link(bpf::kLinkRawTracepoint);
  raw.name = "sched_switch";
  EXPECT_EQ(link_point(raw, ctx), "raw_tp/sched_switch");
  bpf::LinkInfo kp = link(bpf::kLinkPerfEvent);
  kp.perf_event_type = 3;
  kp.name = "do_sys_openat2";
  EXPECT_EQ(link_point(kp, ctx), "kprobe/do_sys_openat2");
  kp.offset = 0x10;
  EXPECT_EQ(link_point(kp, ctx), "kprobe/do_sys_openat2+0x10");
  bpf::LinkInfo up = link(bpf::kLinkPerfEvent);
  up.perf_event_type = 2;
  up.name = "/usr/bin/x";
  up.offset = 0x1234;
  EXPECT_EQ(link_point(up, ctx), "uretprobe//usr/bin/x+0x1234");  // as libbpf SEC names write it
  bpf::LinkInfo ev = link(bpf::kLinkPerfEvent);
  ev.perf_event_type = 6;
  EXPECT_EQ(link_point(ev, ctx), "perf_event");
  bpf::LinkInfo it = link(bpf::kLinkIter);
  it.name = "task";
  EXPECT_EQ(link_point(it, ctx), "iter/task");
  EXPECT_EQ(link_point(link(99), ctx), "link type 99");
}

TEST(AttachPointsTest, TracepointsGetTheirCategory) {
  AttachContext ctx;
  ctx.tracepoint_category["sched_switch"] = "sched";
  bpf::LinkInfo tp = link(bpf::kLinkPerfEvent);
  tp.perf_event_type = 5;
  tp.name = "sched_switch";
  EXPECT_EQ(link_point(tp, ctx), "tracepoint/sched/sched_switch");
  tp.name = "gone_event";  // no category found: the name alone
  EXPECT_EQ(link_point(tp, ctx), "tracepoint/gone_event");
}

TEST(AttachPointsTest, CgroupsByPathNotId) {
  AttachContext ctx;
  ctx.cgroup_paths[880] = "/sys/fs/cgroup/unified/agent";
  bpf::LinkInfo cg = link(bpf::kLinkCgroup);
  cg.cgroup_id = 880;
  cg.attach_type = 1;
  EXPECT_EQ(link_point(cg, ctx), "cgroup_skb/egress:/sys/fs/cgroup/unified/agent");
  cg.attach_type = 10;
  EXPECT_EQ(link_point(cg, ctx), "cgroup/connect4:/sys/fs/cgroup/unified/agent");
  cg.cgroup_id = 881;  // gone before it could be named
  EXPECT_EQ(link_point(cg, ctx), "cgroup/connect4:cgroup id 881");
  EXPECT_EQ(bpf::cgroup_attach_name(200), "attach_type_200");
}

TEST(AttachPointsTest, InterfacesByNameAndNamespace) {
  AttachContext ctx;
  InterfaceAttach ours{"", 3, "eth0", {}, {7}, {}, {}, {}};
  InterfaceAttach theirs{"netns:4026532174", 3, "veth1", {8, 0, 0}, {}, {}, {}, {}};
  ctx.interfaces = {ours, theirs};
  bpf::LinkInfo xdp = link(bpf::kLinkXdp, 8);
  xdp.ifindex = 3;
  // Index 3 exists in both namespaces: the one the program is attached in wins.
  EXPECT_EQ(link_point(xdp, ctx), "xdp/veth1@netns:4026532174");
  bpf::LinkInfo tcx = link(bpf::kLinkTcx, 7);
  tcx.ifindex = 3;
  tcx.attach_type = bpf::kAttachTcxIngress;
  EXPECT_EQ(link_point(tcx, ctx), "tcx/ingress/eth0");
  tcx.attach_type = bpf::kAttachTcxEgress;
  EXPECT_EQ(link_point(tcx, ctx), "tcx/egress/eth0");
  bpf::LinkInfo gone = link(bpf::kLinkXdp, 9);
  gone.ifindex = 42;
  EXPECT_EQ(link_point(gone, ctx), "xdp/ifindex 42");
  ctx.interfaces[1].xdp = {0, 8, 0};
  EXPECT_EQ(link_point(xdp, ctx), "xdp_generic/veth1@netns:4026532174");
}

TEST(AttachPointsTest, NetnsLinks) {
  AttachContext ctx;
  ctx.netns[4026531840] = "";
  ctx.netns[4026532174] = "blue";
  bpf::LinkInfo l = link(bpf::kLinkNetns);
  l.netns_ino = 4026531840;
  l.attach_type = 36;
  EXPECT_EQ(link_point(l, ctx), "sk_lookup");
  l.netns_ino = 4026532174;
  l.attach_type = 17;
  EXPECT_EQ(link_point(l, ctx), "flow_dissector@blue");
}

}  // namespace
}  // namespace bpfprof::record
