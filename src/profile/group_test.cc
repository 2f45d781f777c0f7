// SPDX-License-Identifier: Apache-2.0
#include "profile/group.h"

#include <gtest/gtest.h>

namespace bpfprof::profile {
namespace {

// A profile of three threads: BPF leaf under a kernel caller, a kernel leaf,
// and a user leaf.
class GroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FrameId bpf = p_.add_frame({"bpf_prog_aa_burn", "[bpf]", "burn.c:12", FrameKind::kBpf, 1, 0});
    FrameId bpf2 = p_.add_frame({"bpf_prog_aa_burn", "[bpf]", "burn.c:13", FrameKind::kBpf, 1, 0});
    FrameId run = p_.add_frame({"bpf_test_run", "[kernel.kallsyms]", "", FrameKind::kKernel});
    FrameId sys = p_.add_frame({"__sys_bpf", "[kernel.kallsyms]", "", FrameKind::kKernel});
    FrameId main = p_.add_frame({"main", "/bin/w", "", FrameKind::kUser});
    StackId s1 = p_.add_stack({bpf, run, sys});
    StackId s2 = p_.add_stack({bpf2, run, main});
    StackId s3 = p_.add_stack({run, sys});
    StackId s4 = p_.add_stack({main});
    for (int i = 0; i < 4; i++) p_.add_sample(s1, {7, 7, "w"}, 1, 1);
    for (int i = 0; i < 2; i++) p_.add_sample(s2, {7, 8, "w"}, 1, 1);
    p_.add_sample(s3, {9, 9, "k"}, 1, 1);
    p_.add_sample(s4, {7, 7, "w"}, 1, 1);
  }
  Profile p_;
};

TEST(SortKeys, ParsesCommaSeparatedAndRepeated) {
  auto keys = parse_sort_keys({"prog,sym", "comm", "sym"});
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(*keys, (std::vector<SortKey>{SortKey::kProg, SortKey::kSym, SortKey::kComm}));
  EXPECT_EQ(*parse_sort_keys({}), std::vector<SortKey>{SortKey::kSym});
}

TEST(SortKeys, UnknownKeyListsValidOnes) {
  auto keys = parse_sort_keys({"sym,bogus"});
  ASSERT_FALSE(keys.ok());
  EXPECT_EQ(keys.error().code, Errc::kInvalidArgument);
  EXPECT_EQ(keys.error().message,
            "unknown sort key 'bogus' (valid keys: prog, sym, dso, comm, pid, line, cgroup, "
            "container, owner, attach)");
}

TEST(Containers, FromTheRuntimesPathPatterns) {
  const std::string id(64, 'a');
  const std::string id2 = "0123456789abcdef" + std::string(48, 'f');
  EXPECT_EQ(container_of("/system.slice/docker-" + id + ".scope"), "docker:aaaaaaaaaaaa");
  EXPECT_EQ(container_of("/docker/" + id2), "docker:0123456789ab");
  EXPECT_EQ(container_of("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b."
                         "slice/cri-containerd-" + id2 + ".scope"),
            "containerd:0123456789ab");
  EXPECT_EQ(container_of("/kubepods.slice/kubepods-pod9.slice/crio-" + id + ".scope"),
            "cri-o:aaaaaaaaaaaa");
  EXPECT_EQ(container_of("/machine.slice/libpod-" + id + ".scope/container"), "podman:aaaaaaaaaaaa");
  EXPECT_EQ(container_of("/kubepods/burstable/pod1234/" + id2), "container:0123456789ab");
  // Not a container: the path itself.
  EXPECT_EQ(container_of("/user.slice/user-0.slice/session-3.scope"),
            "/user.slice/user-0.slice/session-3.scope");
  EXPECT_EQ(container_of("/system.slice/docker-" + id.substr(1) + ".scope"),
            "/system.slice/docker-" + id.substr(1) + ".scope");
  EXPECT_EQ(container_of("/"), "/");
}

TEST(Containers, ByCgroupAndContainer) {
  Profile p;
  const std::string scope = "/system.slice/docker-" + std::string(64, 'b') + ".scope";
  const StackId s = p.add_stack({p.add_frame({"f", "/bin/f", "", FrameKind::kUser})});
  p.add_sample(s, {1, 1, "a", "/a"}, 1, 1);
  p.add_sample(s, {1, 1, "a", "/a"}, 1, 1);
  p.add_sample(s, {2, 2, "b", scope}, 1, 1);
  p.add_sample(s, {3, 3, "c", scope + "/sub"}, 1, 1);
  p.add_sample(s, {4, 4, "d"}, 1, 1);
  GroupOptions o;
  o.keys = {SortKey::kCgroup};
  EXPECT_TRUE(needs_cgroups(o.keys));
  EXPECT_FALSE(needs_cgroups({SortKey::kSym, SortKey::kPid}));
  auto rows = group(p, o);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].values[0], "/a");
  EXPECT_EQ(rows[0].counts.samples, 2u);
  o.keys = {SortKey::kContainer};
  rows = group(p, o);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].values[0], "/a");  // ties by value
  EXPECT_EQ(rows[1].values[0], "docker:bbbbbbbbbbbb");
  EXPECT_EQ(rows[1].counts.samples, 2u);
  EXPECT_EQ(rows[2].values[0], "[unknown]");
}

TEST_F(GroupTest, BySymbolSortedBySamples) {
  auto rows = group(p_, {});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].values, std::vector<std::string>{"bpf_prog_aa_burn"});
  EXPECT_EQ(rows[0].sym_dso, "[bpf]");
  EXPECT_EQ(rows[0].counts.samples, 6u);
  // Ties ordered by value.
  EXPECT_EQ(rows[1].values[0], "bpf_test_run");
  EXPECT_EQ(rows[2].values[0], "main");
}

TEST_F(GroupTest, ByProgLineAndPid) {
  GroupOptions o;
  o.keys = {SortKey::kProg, SortKey::kLine};
  o.program_names = {"burn"};
  auto rows = group(p_, o);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].values, (std::vector<std::string>{"burn", "burn.c:12"}));
  EXPECT_EQ(rows[1].values, (std::vector<std::string>{"[not bpf]", "[unknown]"}));
  EXPECT_EQ(rows[2].values, (std::vector<std::string>{"burn", "burn.c:13"}));
  EXPECT_TRUE(rows[0].sym_dso.empty());
  o.keys = {SortKey::kPid};
  rows = group(p_, o);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].values[0], "7:w");
  EXPECT_EQ(rows[0].counts.samples, 7u);
}

TEST_F(GroupTest, ByAttachPoint) {
  GroupOptions o;
  o.keys = {SortKey::kAttach};
  o.program_names = {"burn"};
  o.program_attach = {"raw_tp/sched_switch, xdp/eth0"};
  o.bpf_only = true;
  auto rows = group(p_, o);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].values[0], "raw_tp/sched_switch, xdp/eth0");
  EXPECT_EQ(rows[0].counts.samples, 6u);
  o.bpf_only = false;
  rows = group(p_, o);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0].values[0] == "[not bpf]" || rows[1].values[0] == "[not bpf]");
  o.program_attach.clear();  // a program the table does not cover
  o.bpf_only = true;
  rows = group(p_, o);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].values[0], "[unknown]");
}

TEST_F(GroupTest, BpfOnlyKeepsBpfLeaves) {
  GroupOptions o;
  o.bpf_only = true;
  auto rows = group(p_, o);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].counts.samples, 6u);
}

TEST_F(GroupTest, CallersTreeWalksFromLeafToRoot) {
  GroupOptions o;
  o.with_stacks = true;
  auto rows = group(p_, o);
  CallNode tree = callers_tree(p_, rows[0].stacks);
  EXPECT_EQ(tree.samples, 6u);
  ASSERT_EQ(tree.children.size(), 1u);
  EXPECT_EQ(tree.children[0].symbol, "bpf_test_run");
  EXPECT_EQ(tree.children[0].samples, 6u);
  ASSERT_EQ(tree.children[0].children.size(), 2u);
  EXPECT_EQ(tree.children[0].children[0].symbol, "__sys_bpf");
  EXPECT_EQ(tree.children[0].children[0].samples, 4u);
  EXPECT_EQ(tree.children[0].children[1].symbol, "main");
  EXPECT_EQ(tree.children[0].children[1].dso, "/bin/w");
}

}  // namespace
}  // namespace bpfprof::profile
