// SPDX-License-Identifier: Apache-2.0
#include "record/owners.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "perfdata/features.h"
#include "perfdata/file_format.h"
#include "testing/subprocess.h"

namespace bpfprof::record {
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
  make("100", "agent", {{3, "anon_inode:bpf-prog", "prog_id:\t10\n"},
                        {4, "anon_inode:bpf_link", "link_id:\t1\nprog_id:\t10\n"},
                        {5, "/dev/null", "prog_id:\t11\n"}});
  make("200", "cni", {{7, "anon_inode:bpf-map", "map_id:\t3\n"},
                      {8, "anon_inode:bpf_link", "link_id:\t2\nprog_id:\t11\n"},
                      {9, "anon_inode:bpf-prog", "prog_id:\t99\n"}});
  ::mkdir((proc.path() + "/self").c_str(), 0755);  // not a pid

  perfdata::OwnersSection s = scan_program_owners({11, 10, 12}, proc.path());
  EXPECT_EQ(s.scanned, (std::vector<uint32_t>{10, 11, 12}));
  ASSERT_EQ(s.holders.size(), 2u);
  EXPECT_EQ(s.holders[0].prog_id, 10u);
  EXPECT_EQ(s.holders[0].pid, 100u);
  EXPECT_EQ(s.holders[0].comm, "agent");
  EXPECT_EQ(s.holders[0].flags, ProgramHolder::kProgFd | ProgramHolder::kLinkFd);
  EXPECT_EQ(s.holders[1].prog_id, 11u);
  EXPECT_EQ(s.holders[1].pid, 200u);
  EXPECT_EQ(s.holders[1].flags, ProgramHolder::kLinkFd);

  // Through the feature table and back.
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
  // Every cut of the section is refused, never read past its end.
  for (size_t n = 0; n < bytes.size(); n += 4) {
    Bytes cut(bytes.data(), n);
    EXPECT_FALSE(perfdata::decode_owners(cut, 0).ok()) << n;
  }
}

}  // namespace
}  // namespace bpfprof::record
