// SPDX-License-Identifier: Apache-2.0
#include "host/owners.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "perfdata/features.h"
#include "perfdata/file_format.h"
#include "testing/subprocess.h"

namespace bpfprof::host {
namespace {

using perfdata::ProgramHolder;

TEST(OwnersTest, ProgIdOfFdinfo) {
  EXPECT_EQ(fdinfo_prog_id("pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1057\n"
                           "prog_type:\t1\nprog_jited:\t1\nprog_tag:\t0011223344556677\n"
                           "memlock:\t4096\nprog_id:\t4242\nrun_time_ns:\t0\n"),
            4242u);
  EXPECT_EQ(fdinfo_prog_id("link_type:\traw_tracepoint\nlink_id:\t7\nprog_tag:\taa\n"
                           "prog_id:\t77"),
            77u);
  EXPECT_EQ(fdinfo_prog_id("map_type:\t1\nmap_id:\t5\n"), 0u);
  EXPECT_EQ(fdinfo_prog_id("prog_id:\tbogus\n"), 0u);
}

TEST(OwnersTest, BpffsMounts) {
  const std::string text =
      "22 1 0:21 / /sys rw - sysfs sysfs rw\n"
      "41 22 0:38 / /sys/fs/bpf rw,nosuid - bpf bpf rw,mode=700\n"
      "42 22 0:39 / /run/my\\040pins rw - bpf none rw\n"
      "43 22 0:40 / /x rw - bpfish x rw\n";
  EXPECT_EQ(bpffs_mounts(text), (std::vector<std::string>{"/sys/fs/bpf", "/run/my pins"}));
}

// A /proc of two processes: one with a program fd and a link fd, one with
// a map fd and a link of another program; only the programs asked for count.
TEST(OwnersTest, ScansProcessesForProgramAndLinkFds) {
  testing::TempDir proc;
  auto make = [&](const std::string& pid, const std::string& comm,
                  std::vector<std::tuple<int, std::string, std::string>> fds) {
    const std::string base = proc.path() + "/" + pid;
    ASSERT_EQ(::mkdir(base.c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((base + "/fd").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((base + "/fdinfo").c_str(), 0755), 0);
    std::ofstream(base + "/comm") << comm << "\n";
    for (const auto& [fd, target, info] : fds) {
      ASSERT_EQ(::symlink(target.c_str(), (base + "/fd/" + std::to_string(fd)).c_str()), 0);
      std::ofstream(base + "/fdinfo/" + std::to_string(fd)) << info;
    }
  };
  // The agent's cgroup is a directory of a cgroup2 mount the test makes up;
  // cni's names one that is not there (unknown, 0).
  testing::TempDir cgroups;
  ASSERT_EQ(::mkdir((cgroups.path() + "/agent.slice").c_str(), 0755), 0);
  const Cgroup2Mount mount{cgroups.path(), "/"};
  const uint64_t agent_cgroup = cgroup_id(cgroups.path() + "/agent.slice").value_or(0);
  ASSERT_NE(agent_cgroup, 0u);
  make("100", "agent", {{3, "anon_inode:bpf-prog", "prog_id:\t10\n"},
                        {4, "anon_inode:bpf_link", "link_id:\t1\nprog_id:\t10\n"},
                        {5, "/dev/null", "prog_id:\t11\n"}});
  make("200", "cni", {{7, "anon_inode:bpf-map", "map_id:\t3\n"},
                      {8, "anon_inode:bpf_link", "link_id:\t2\nprog_id:\t11\n"},
                      {9, "anon_inode:bpf-prog", "prog_id:\t99\n"}});
  ::mkdir((proc.path() + "/self").c_str(), 0755);  // not a pid
  std::ofstream(proc.path() + "/100/cgroup") << "3:cpu:/x\n0::/agent.slice\n";
  std::ofstream(proc.path() + "/200/cgroup") << "0::/gone\n";

  perfdata::OwnersSection s = scan_program_owners({11, 10, 12}, mount, proc.path());
  EXPECT_EQ(s.scanned, (std::vector<uint32_t>{10, 11, 12}));
  ASSERT_EQ(s.holders.size(), 2u);
  EXPECT_EQ(s.holders[0].prog_id, 10u);
  EXPECT_EQ(s.holders[0].pid, 100u);
  EXPECT_EQ(s.holders[0].comm, "agent");
  EXPECT_EQ(s.holders[0].flags, ProgramHolder::kProgFd | ProgramHolder::kLinkFd);
  EXPECT_EQ(s.holders[0].cgroup_id, agent_cgroup);
  EXPECT_EQ(s.holders[1].cgroup_id, 0u);
  EXPECT_EQ(s.holders[1].prog_id, 11u);
  EXPECT_EQ(s.holders[1].pid, 200u);
  EXPECT_EQ(s.holders[1].flags, ProgramHolder::kLinkFd);

  // Through the feature table and back, with the loaders' cgroups.
  s.loaders = {{40, 7}, {41, 0x1234'5678'9abcULL}};
  perfdata::Features f;
  f.owners = s;
  auto sections = perfdata::encode_features(f, {});
  ASSERT_EQ(sections.count(perfdata::kFeatBpfprofOwners), 1u);
  perfdata::Features back;
  std::vector<std::string> names;
  const auto& bytes = sections.at(perfdata::kFeatBpfprofOwners);
  ASSERT_TRUE(perfdata::decode_feature(perfdata::kFeatBpfprofOwners, bytes, 0, back, names).ok());
  ASSERT_TRUE(back.owners.has_value());
  EXPECT_EQ(back.owners->scanned, s.scanned);
  ASSERT_EQ(back.owners->holders.size(), 2u);
  EXPECT_EQ(back.owners->holders[1].comm, "cni");
  EXPECT_EQ(back.owners->holders[0].flags, s.holders[0].flags);
  EXPECT_EQ(back.owners->holders[0].cgroup_id, agent_cgroup);
  ASSERT_EQ(back.owners->loaders.size(), 2u);
  EXPECT_EQ(back.owners->loaders[1].prog_id, 41u);
  EXPECT_EQ(back.owners->loaders[1].cgroup_id, 0x1234'5678'9abcULL);
  // Every cut of the section is refused, never read past its end — but
  // the one right after the holders, which is a section without loaders.
  const size_t holders_end = bytes.size() - 8 - 2 * 16;
  for (size_t n = 0; n < bytes.size(); n += 4) {
    Bytes cut(bytes.data(), n);
    auto decoded = perfdata::decode_owners(cut, 0);
    EXPECT_EQ(decoded.ok(), n == holders_end) << n;
  }
}

// A section as versions before the cgroups wrote it: 32-byte entries and
// nothing after the holders. Read, its cgroups unknown.
TEST(OwnersTest, ReadsSectionsWithoutCgroups) {
  std::vector<std::byte> old;
  for (uint32_t v : {1u, 32u, 1u, 1u, 10u, 0u, 10u, 100u, 1u, 0u}) append_pod(old, v);
  char comm[16] = "agent";
  append_pod(old, comm);
  auto s = perfdata::decode_owners(old, 0);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  ASSERT_EQ(s->holders.size(), 1u);
  EXPECT_EQ(s->holders[0].comm, "agent");
  EXPECT_EQ(s->holders[0].cgroup_id, 0u);
  EXPECT_TRUE(s->loaders.empty());
  // A loader table with entries smaller than they can be is refused.
  for (uint32_t v : {1u, 8u}) append_pod(old, v);
  old.resize(old.size() + 8);
  auto bad = perfdata::decode_owners(old, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().to_string().find("loader_entry_size 8"), std::string::npos)
      << bad.error().to_string();
}

TEST(OwnersTest, CgroupDirectoryOfProcCgroup) {
  const Cgroup2Mount whole{"/sys/fs/cgroup/unified", "/"};
  EXPECT_EQ(cgroup_dir_of("12:pids:/\n0::/a/b\n", whole), "/sys/fs/cgroup/unified/a/b");
  EXPECT_EQ(cgroup_dir_of("0::/\n", whole), "/sys/fs/cgroup/unified");
  EXPECT_EQ(cgroup_dir_of("1:name=systemd:/x\n", whole), "");
  const Cgroup2Mount sub{"/mnt/cg", "/kubepods"};
  EXPECT_EQ(cgroup_dir_of("0::/kubepods/pod1\n", sub), "/mnt/cg/pod1");
  EXPECT_EQ(cgroup_dir_of("0::/kubepods\n", sub), "/mnt/cg");
  EXPECT_EQ(cgroup_dir_of("0::/kubepodsx/pod1\n", sub), "");
  EXPECT_EQ(cgroup_dir_of("0::/system.slice\n", sub), "");
}

}  // namespace
}  // namespace bpfprof::host
