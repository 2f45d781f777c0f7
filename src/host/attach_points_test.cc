// SPDX-License-Identifier: Apache-2.0
// Attach points as a user writes them, from bpf_link_info fields and what the
// recorder resolved at the same time (cgroup paths, interfaces, namespaces,
// tracepoint categories). The live scan is checked by the kernel test
// (tests/kernel/attach_test.cc).
#include "host/attach_points.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "testing/subprocess.h"

namespace bpfprof::host {
namespace {

bpf::LinkInfo link(uint32_t type, uint32_t prog = 5) {
  bpf::LinkInfo l;
  l.id = 1;
  l.type = type;
  l.prog_id = prog;
  return l;
}

// A /proc as the scan walks it, with what goes wrong between listing and
// query: a process gone (its pid exists in the listing, not in the kernel:
// BPF_TASK_FD_QUERY fails), and an fd directory that cannot be read.
TEST(AttachPointsTest, PerfEventFdsGoneOrUnreadableAreCountedNotFatal) {
  testing::TempDir proc;
  // pid_max is at most 4194304: this pid is no process.
  const std::string gone = proc.file("4194305");
  ASSERT_EQ(::mkdir(gone.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((gone + "/fd").c_str(), 0755), 0);
  ASSERT_EQ(::symlink("anon_inode:[perf_event]", (gone + "/fd/3").c_str()), 0);
  ASSERT_EQ(::symlink("anon_inode:bpf-prog", (gone + "/fd/4").c_str()), 0);  // not asked
  std::ofstream(gone + "/comm") << "gone\n";
  // A /proc/<pid>/fd that is no directory: opendir fails as on EACCES.
  const std::string locked = proc.file("4194306");
  ASSERT_EQ(::mkdir(locked.c_str(), 0755), 0);
  std::ofstream(locked + "/fd") << "";
  ASSERT_EQ(::mkdir(proc.file("self").c_str(), 0755), 0);  // not a pid: skipped
  const PerfFdScan scan = scan_perf_event_fds(perfdata::AttachEntry::kAtStart, 0, proc.path());
  EXPECT_TRUE(scan.entries.empty());
  EXPECT_EQ(scan.lost, 1u);
  EXPECT_EQ(scan.unreadable, 1u);
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

capture::CapturedLink captured(uint32_t link_id, uint32_t type, uint32_t prog = 5) {
  capture::CapturedLink c;
  c.link_id = link_id;
  c.prog_id = prog;
  c.link_type = type;
  c.flags = CAPTURE_LINK_NAMED;
  return c;
}

TEST(AttachPointsTest, CapturedLinksAreNamedAsListedOnes) {
  AttachContext ctx;
  ctx.cgroup_paths[880] = "/sys/fs/cgroup/agent";
  ctx.netns[4026531840] = "";
  capture::CapturedLink raw = captured(1, bpf::kLinkRawTracepoint);
  raw.name = "task_rename";
  EXPECT_EQ(captured_point(raw, ctx), "raw_tp/task_rename");
  capture::CapturedLink tp = captured(2, bpf::kLinkPerfEvent);
  tp.flags |= CAPTURE_LINK_TRACEPOINT;
  tp.name = "sys_enter_getppid";
  tp.category = "syscalls";
  EXPECT_EQ(captured_point(tp, ctx), "tracepoint/syscalls/sys_enter_getppid");
  capture::CapturedLink cg = captured(3, bpf::kLinkCgroup);
  cg.cgroup_id = 880;
  cg.attach_type = 1;
  EXPECT_EQ(captured_point(cg, ctx), "cgroup_skb/egress:/sys/fs/cgroup/agent");
  capture::CapturedLink xdp = captured(4, bpf::kLinkXdp);
  xdp.ifindex = 3;
  xdp.ifname = "veth1";
  xdp.netns_ino = 4026532174;  // no label known: by inode
  xdp.xdp_mode = 1;
  EXPECT_EQ(captured_point(xdp, ctx), "xdp/veth1@netns:4026532174");
  xdp.xdp_mode = 0;
  xdp.netns_ino = 4026531840;  // ours
  EXPECT_EQ(captured_point(xdp, ctx), "xdp_generic/veth1");
  capture::CapturedLink tcx = captured(5, bpf::kLinkTcx);
  tcx.ifindex = 3;
  tcx.ifname = "eth0";
  tcx.netns_ino = 4026531840;
  tcx.attach_type = bpf::kAttachTcxEgress;
  EXPECT_EQ(captured_point(tcx, ctx), "tcx/egress/eth0");
  capture::CapturedLink ns = captured(6, bpf::kLinkNetns);
  ns.netns_ino = 4026531840;
  ns.attach_type = 17;
  EXPECT_EQ(captured_point(ns, ctx), "flow_dissector");
}

TEST(AttachPointsTest, CapturedAttachmentsWithoutALink) {
  AttachContext ctx;
  ctx.cgroup_paths[880] = "/sys/fs/cgroup/agent";
  capture::CapturedLink cg = captured(0, 0);
  cg.flags |= CAPTURE_LINK_PROG_ATTACH;
  cg.cgroup_id = 880;
  cg.attach_type = 10;
  EXPECT_EQ(captured_point(cg, ctx), "cgroup/connect4:/sys/fs/cgroup/agent");
  cg.cgroup_id = 881;  // removed before it was named
  EXPECT_EQ(captured_point(cg, ctx), "cgroup/connect4:cgroup id 881");
  capture::CapturedLink tcx = captured(0, 0);
  tcx.flags |= CAPTURE_LINK_PROG_ATTACH;
  tcx.ifindex = 9;
  tcx.netns_ino = 4026532174;
  tcx.attach_type = bpf::kAttachTcxIngress;
  EXPECT_EQ(captured_point(tcx, ctx), "tcx/ingress/ifindex 9@netns:4026532174");
}

TEST(AttachPointsTest, CapturedLinksNotNamedAreLeftToAQueryById) {
  AttachContext ctx;
  capture::CapturedLink kprobe = captured(1, bpf::kLinkPerfEvent);  // not a tracepoint
  EXPECT_EQ(captured_point(kprobe, ctx), std::nullopt);
  capture::CapturedLink unnamed = captured(2, bpf::kLinkRawTracepoint);
  unnamed.flags = 0;
  EXPECT_EQ(captured_point(unnamed, ctx), std::nullopt);
  EXPECT_EQ(captured_point(captured(3, bpf::kLinkStructOps), ctx), std::nullopt);
}

TEST(AttachPointsTest, SyscallProgramsAndTestRunOnly) {
  using perfdata::AttachEntry;
  const std::vector<AttachEntry> listed = {{7, 1, AttachEntry::kAtStart, 0, "raw_tp/a"}};
  const std::vector<KnownProgram> programs = {{7, 17, AttachEntry::kAtStart, 0},
                                              {8, kProgTypeSyscall, AttachEntry::kCaptured, 50},
                                              {9, 3, AttachEntry::kCaptured, 60}};
  // 7 is attached, 8 is a syscall program: run by test_run, neither is `test_run only`.
  const std::map<uint32_t, uint64_t> runs = {{7, 100}, {8, 110}, {9, 120}};
  const std::vector<AttachEntry> want = {{8, 0, AttachEntry::kCaptured, 50, "syscall"},
                                         {9, 0, AttachEntry::kCaptured, 120, "test_run only"}};
  EXPECT_EQ(program_points(listed, programs, runs), want);
  // Named once: a second call with what it added adds nothing.
  std::vector<AttachEntry> all = listed;
  all.insert(all.end(), want.begin(), want.end());
  EXPECT_TRUE(program_points(all, programs, runs).empty());
}

}  // namespace
}  // namespace bpfprof::host
