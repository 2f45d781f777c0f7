// SPDX-License-Identifier: Apache-2.0
#include "base/prefault.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <vector>

namespace bpfprof {
namespace {

// Whole pages inside [p, p + n) that are resident (mincore).
size_t resident_pages(const void* p, size_t n) {
  constexpr uintptr_t kPage = 4096;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kPage - 1) & ~(kPage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) & ~(kPage - 1);
  std::vector<unsigned char> in((end - begin) / kPage);
  if (::mincore(reinterpret_cast<void*>(begin), end - begin, in.data()) != 0) return 0;
  size_t resident = 0;
  for (unsigned char c : in) resident += c & 1;
  return resident;
}

// Fresh anonymous memory: no page is resident until written, or prefaulted.
TEST(PrefaultTest, LargeBlocksAreResidentBeforeTheirFirstWrite) {
  constexpr size_t kBytes = size_t{2} << 20;
  void* probe = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(probe, MAP_FAILED);
  const bool populate = ::madvise(probe, 4096, MADV_POPULATE_WRITE) == 0;
  ::munmap(probe, 4096);
  if (!populate) GTEST_SKIP() << "MADV_POPULATE_WRITE refused (kernel before 5.14): " << errno;

  void* fresh = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(fresh, MAP_FAILED);
  EXPECT_EQ(resident_pages(fresh, kBytes), 0u);
  prefault(fresh, kBytes);
  EXPECT_EQ(resident_pages(fresh, kBytes), kBytes / 4096);
  ::munmap(fresh, kBytes);

  // Below the threshold nothing is asked of the kernel.
  constexpr size_t kSmall = kPrefaultMinBytes - 4096;
  void* small = ::mmap(nullptr, kSmall, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(small, MAP_FAILED);
  prefault(small, kSmall);
  EXPECT_EQ(resident_pages(small, kSmall), 0u);
  ::munmap(small, kSmall);
}

TEST(PrefaultTest, AllocatorHandsOutPrefaultedBlocksThatHoldValues) {
  std::vector<uint64_t, PrefaultAllocator<uint64_t>> v;
  v.reserve(1 << 20);  // 8 MiB: the block is resident before any element is written
  if (resident_pages(v.data(), v.capacity() * sizeof(uint64_t)) == 0) {
    GTEST_SKIP() << "MADV_POPULATE_WRITE refused (kernel before 5.14)";
  }
  EXPECT_EQ(
      resident_pages(v.data(), v.capacity() * sizeof(uint64_t)),
      v.capacity() * sizeof(uint64_t) / 4096 - (reinterpret_cast<uintptr_t>(v.data()) % 4096 != 0));
  for (uint64_t i = 0; i < 1000; i++) v.push_back(i * 3);
  EXPECT_EQ(v[999], 2997u);
  std::vector<uint64_t, PrefaultAllocator<uint64_t>> w = v;
  EXPECT_EQ(w, v);
}

}  // namespace
}  // namespace bpfprof
