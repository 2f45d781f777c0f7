// SPDX-License-Identifier: Apache-2.0
// Kernel build ids from a BUILD_ID feature section and from ELF notes.
#include "perfdata/build_ids.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace bpfprof::perfdata {
namespace {

// One BUILD_ID entry as perf 6.1 writes it (filename padded to 64).
void entry(std::vector<std::byte>& out, int32_t pid, uint16_t misc, const std::vector<uint8_t>& id,
           const std::string& name) {
  const size_t padded = (name.size() + 1 + 63) / 64 * 64;
  append_pod(out, uint32_t{0});
  append_pod(out, misc);
  append_pod(out, static_cast<uint16_t>(36 + padded));
  append_pod(out, pid);
  for (size_t i = 0; i < 20; i++) append_pod(out, i < id.size() ? id[i] : uint8_t{0});
  append_pod(out, static_cast<uint8_t>(id.size()));
  for (int i = 0; i < 3; i++) append_pod(out, uint8_t{0});
  for (size_t i = 0; i < padded; i++)
    append_pod(out, i < name.size() ? static_cast<uint8_t>(name[i]) : uint8_t{0});
}

TEST(BuildIdsTest, TheHostKernelsEntryOfABuildIdSection) {
  const std::vector<uint8_t> kernel = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                                       11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
  const std::vector<uint8_t> other = {9, 9, 9};
  std::vector<std::byte> s;
  entry(s, -1, 2 | (1 << 15), other, "/usr/bin/true");     // user
  entry(s, 5, 1 | (1 << 15), other, "[kernel.kallsyms]");  // a guest's kernel
  entry(s, -1, 1 | (1 << 15), other, "[nf_tables]");       // a module
  entry(s, -1, 1 | (1 << 15), kernel, "[kernel.kallsyms]");
  EXPECT_EQ(recorded_kernel_build_id(s), kernel);
  // Without BUILD_ID_SIZE the id is 20 bytes.
  std::vector<std::byte> old;
  entry(old, -1, 1, {0xab}, "[kernel.kallsyms]");
  EXPECT_EQ(recorded_kernel_build_id(old).size(), 20u);
  EXPECT_EQ(recorded_kernel_build_id(old)[0], 0xab);
  // Cut anywhere: never read beyond, and an entry cut short is not found.
  for (size_t cut = 0; cut < s.size(); cut++) {
    const auto id = recorded_kernel_build_id(Bytes(s).first(cut));
    EXPECT_TRUE(id.empty() || cut == s.size()) << cut;
  }
  EXPECT_TRUE(recorded_kernel_build_id({}).empty());
}

TEST(BuildIdsTest, GnuBuildIdNote) {
  std::vector<std::byte> n;
  auto note = [&](uint32_t type, const std::string& name, const std::vector<uint8_t>& desc) {
    append_pod(n, static_cast<uint32_t>(name.size() + 1));
    append_pod(n, static_cast<uint32_t>(desc.size()));
    append_pod(n, type);
    for (size_t i = 0; i < (name.size() + 1 + 3) / 4 * 4; i++)
      append_pod(n, i < name.size() ? static_cast<uint8_t>(name[i]) : uint8_t{0});
    for (size_t i = 0; i < (desc.size() + 3) / 4 * 4; i++)
      append_pod(n, i < desc.size() ? desc[i] : uint8_t{0});
  };
  note(6, "Linux", {1, 2, 3, 4, 5});
  note(3, "GNU", {0xde, 0xad, 0xbe, 0xef});
  EXPECT_EQ(note_build_id(n), (std::vector<uint8_t>{0xde, 0xad, 0xbe, 0xef}));
  for (size_t cut = 0; cut < n.size(); cut++)
    EXPECT_TRUE(note_build_id(Bytes(n).first(cut)).empty()) << cut;
}

TEST(BuildIdsTest, RunningKernel) {
  EXPECT_TRUE(running_kernel_build_id("/nonexistent/notes").empty());
  if (access("/sys/kernel/notes", R_OK) != 0) GTEST_SKIP() << "no /sys/kernel/notes here";
  EXPECT_FALSE(running_kernel_build_id().empty());
}

}  // namespace
}  // namespace bpfprof::perfdata
