// SPDX-License-Identifier: Apache-2.0
#include "host/proc_maps.h"

#include <sys/mman.h>

#include <gtest/gtest.h>

namespace bpfprof::host {
namespace {

constexpr std::string_view kMaps =
    "55d0c5a00000-55d0c5a02000 r--p 00000000 fd:01 1311234                    /usr/bin/sleep\n"
    "55d0c5a02000-55d0c5a06000 r-xp 00002000 fd:01 1311234                    /usr/bin/sleep\n"
    "7f3a1c000000-7f3a1c021000 rw-p 00000000 00:00 0 \n"
    "7f3a1c400000-7f3a1c410000 rwxp 00000000 00:00 0 \n"
    "7f3a1c628000-7f3a1c7bd000 r-xp 00028000 103:02 4194321                  /usr/lib/x86_64-linux-gnu/libc.so.6\n"
    "7f3a1c800000-7f3a1c801000 r-xs 00000000 00:05 77                         /memfd:jit code (deleted)\n"
    "7ffc3b5f2000-7ffc3b5f4000 r-xp 00000000 00:00 0                          [vdso]\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

TEST(ProcMapsTest, ParsesOneLine) {
  auto e = parse_maps_line(
      "7f3a1c628000-7f3a1c7bd000 r-xp 00028000 103:02 4194321   /usr/lib/x86_64-linux-gnu/libc.so.6");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->start, 0x7f3a1c628000u);
  EXPECT_EQ(e->end, 0x7f3a1c7bd000u);
  EXPECT_EQ(e->pgoff, 0x28000u);
  EXPECT_EQ(e->prot, static_cast<uint32_t>(PROT_READ | PROT_EXEC));
  EXPECT_EQ(e->flags, static_cast<uint32_t>(MAP_PRIVATE));
  EXPECT_EQ(e->maj, 0x103u);
  EXPECT_EQ(e->min, 2u);
  EXPECT_EQ(e->ino, 4194321u);
  EXPECT_EQ(e->path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_TRUE(e->exec());
}

TEST(ProcMapsTest, RejectsGarbage) {
  EXPECT_FALSE(parse_maps_line(""));
  EXPECT_FALSE(parse_maps_line("zzzz-1000 r-xp 0 00:00 0"));
  EXPECT_FALSE(parse_maps_line("2000-1000 r-xp 00000000 00:00 0"));
  EXPECT_FALSE(parse_maps_line("1000-2000 r-xp 00000000 0000 0"));
}

TEST(ProcMapsTest, ExecMappingsWithPerfNames) {
  auto maps = exec_mappings(kMaps);
  ASSERT_EQ(maps.size(), 6u);
  EXPECT_EQ(maps[0].filename, "/usr/bin/sleep");
  EXPECT_EQ(maps[0].entry.pgoff, 0x2000u);
  EXPECT_EQ(maps[1].filename, "//anon");
  EXPECT_EQ(maps[2].filename, "/usr/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ(maps[3].filename, "/memfd:jit code (deleted)");
  EXPECT_EQ(maps[3].entry.flags, static_cast<uint32_t>(MAP_SHARED));
  EXPECT_EQ(maps[4].filename, "[vdso]");
  EXPECT_EQ(maps[5].filename, "[vsyscall]");
}

TEST(ProcMapsTest, Status) {
  auto s = parse_status("Name:\tbpfprof\nUmask:\t0022\nState:\tR (running)\nTgid:\t4242\n"
                        "Ngid:\t0\nPid:\t4243\nPPid:\t1\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->comm, "bpfprof");
  EXPECT_EQ(s->tgid, 4242);
  EXPECT_EQ(s->ppid, 1);
  EXPECT_FALSE(parse_status("Umask:\t0022\n"));
}

}  // namespace
}  // namespace bpfprof::host
