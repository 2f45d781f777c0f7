// SPDX-License-Identifier: Apache-2.0
// The kallsyms snapshot of version 5 (what record writes): the same table as
// version 2, decompressed a block at a time when a lookup first needs it,
// from any number of threads; damage in the index is refused at open, damage
// inside a block leaves that block without symbols and says where.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "perfdata/features.h"
#include "perfdata/kallsyms_table.h"

namespace bpfprof::perfdata {
namespace {

// `n` symbols 48 bytes apart, the last 1000 in a module.
std::string kallsyms_text(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    char addr[17];
    std::snprintf(addr, sizeof addr, "%016llx",
                  0xffffffff81000000ull + 48ull * static_cast<unsigned>(i));
    text += std::string(addr) + (i % 3 ? " t " : " T ") + "kernel_function_" + std::to_string(i) +
            (i >= n - 1000 ? "\t[some_module]" : "") + "\n";
  }
  return text;
}

uint32_t u32_at(const std::vector<std::byte>& b, size_t at) { return load_unaligned<uint32_t>(b.data() + at); }
uint64_t u64_at(const std::vector<std::byte>& b, size_t at) { return load_unaligned<uint64_t>(b.data() + at); }

uint32_t per_block(const std::vector<std::byte>& v5) { return u32_at(v5, 28); }
uint32_t blocks(const std::vector<std::byte>& v5) { return u32_at(v5, 32); }

// Where block `b`'s frame starts in a version 5 section.
size_t block_frame_at(const std::vector<std::byte>& v5, uint32_t b) {
  const size_t ends = 40 + 8 * size_t{blocks(v5)};
  const size_t frames = ends + 8 * size_t{blocks(v5)} + 4 * size_t{u32_at(v5, 24)} + u32_at(v5, 36);
  return frames + (b == 0 ? 0 : u64_at(v5, ends + 8 * (b - 1)));
}

TEST(KallsymsBlockedTest, SameTableAsVersionTwoBlocksDecodedWhenNeeded) {
  const std::string text = kallsyms_text(20000);
  const std::vector<std::byte> v2 = encode_kallsyms(text);
  const std::vector<std::byte> v5 = encode_kallsyms_blocked(text);
  ASSERT_EQ(u32_at(v5, 0), 5u);
  EXPECT_LT(v5.size() * 4, v2.size()) << v5.size() << " vs " << v2.size();
  auto a = KallsymsTable::open(v2, 0);
  auto b = KallsymsTable::open(v5, 0);
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  ASSERT_TRUE(b.ok()) << b.error().to_string();
  ASSERT_EQ(b->size(), 20000u);
  EXPECT_EQ(b->etext(), a->etext());
  ASSERT_EQ(b->module_count(), 1u);
  EXPECT_EQ(b->module_dso(1), "[some_module]");
  const size_t k = per_block(v5);
  ASSERT_EQ(blocks(v5), (20000 + k - 1) / k);
  // Opening decodes nothing; one lookup decodes its block, and the rest of
  // that block's symbols and the first of any block (the index has it) cost
  // no more.
  EXPECT_EQ(b->blocks_decoded(), 0u);
  EXPECT_EQ(b->floor(a->addr(12345) + 5), 12345u);
  EXPECT_EQ(b->blocks_decoded(), 1u);
  EXPECT_EQ(b->name(12345), "kernel_function_12345");
  EXPECT_EQ(b->addr(12346), a->addr(12346));
  EXPECT_EQ(b->module(12346), a->module(12346));
  EXPECT_EQ(b->addr(2 * k), a->addr(2 * k));
  EXPECT_EQ(b->blocks_decoded(), 1u);
  // A copy shares the blocks decoded.
  const KallsymsTable copy = *b;
  EXPECT_EQ(copy.name(12344), "kernel_function_12344");
  EXPECT_EQ(copy.blocks_decoded(), 1u);
  for (size_t i = 0; i < a->size(); i++) {
    ASSERT_EQ(a->addr(i), b->addr(i)) << i;
    ASSERT_EQ(a->name(i), b->name(i)) << i;
    ASSERT_EQ(a->module(i), b->module(i)) << i;
    ASSERT_EQ(b->floor(a->addr(i) + 47), i) << i;
  }
  EXPECT_EQ(b->floor(a->addr(0) - 1), b->size());
  EXPECT_EQ(b->floor(~uint64_t{0}), b->size() - 1);
  EXPECT_EQ(b->blocks_decoded(), blocks(v5));
  EXPECT_FALSE(b->damage().has_value());

  auto empty = KallsymsTable::open(encode_kallsyms_blocked(""), 0);
  ASSERT_TRUE(empty.ok()) << empty.error().to_string();
  EXPECT_EQ(empty->size(), 0u);
  EXPECT_EQ(empty->floor(0xffffffff81000000ull), 0u);
}

// Threads looking up symbols of the same blocks at once get the same
// answers, each block published once (scripts/test.sh runs this binary under
// TSan too).
TEST(KallsymsBlockedTest, ThreadsShareEachBlockDecodedOnce) {
  const std::string text = kallsyms_text(20000);
  const std::vector<std::byte> v5 = encode_kallsyms_blocked(text);
  auto t = KallsymsTable::open(v5, 0);
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  const std::vector<std::byte> v2 = encode_kallsyms(text);  // read in place
  auto want = KallsymsTable::open(v2, 0);
  ASSERT_TRUE(want.ok());
  std::vector<std::thread> threads;
  std::vector<size_t> wrong(4, 0);
  for (size_t k = 0; k < wrong.size(); k++) {
    threads.emplace_back([&, k] {
      for (size_t i = 0; i < t->size(); i += 7) {
        const size_t at = (i + k * 1117) % t->size();
        if (t->floor(want->addr(at)) != at || t->name(at) != want->name(at)) wrong[k]++;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (size_t k = 0; k < wrong.size(); k++) EXPECT_EQ(wrong[k], 0u) << k;
  EXPECT_EQ(t->blocks_decoded(), blocks(v5));
}

// Damage in the header or the index: refused at open with an offset, or
// read as another consistent table. Damage inside a block's frame: that
// block holds no symbol, damage() names the block and its offset, the
// others read.
TEST(KallsymsBlockedTest, DamageIsRefusedOrConfinedToItsBlock) {
  const std::string text = kallsyms_text(5000);
  const std::vector<std::byte> v5 = encode_kallsyms_blocked(text);
  auto good = KallsymsTable::open(v5, 0);
  ASSERT_TRUE(good.ok()) << good.error().to_string();
  const size_t frames_at = block_frame_at(v5, 0);
  for (size_t at = 4; at < frames_at; at++) {
    std::vector<std::byte> bad = v5;
    bad[at] ^= std::byte{0x5a};
    auto t = KallsymsTable::open(bad, 1000);
    if (t.ok()) {
      for (size_t i = 0; i < t->size(); i++) {
        const size_t f = t->floor(t->addr(i));
        ASSERT_TRUE(f == i || f == t->size()) << at << " " << i;
        (void)t->name(i);
        if (t->module(i) != 0) (void)t->module_dso(t->module(i));
      }
    } else {
      ASSERT_TRUE(t.error().offset.has_value()) << t.error().to_string();
      EXPECT_GE(*t.error().offset, 1000u);
    }
  }
  std::vector<std::byte> cut(v5.begin(), v5.end() - 3);
  EXPECT_FALSE(KallsymsTable::open(cut, 0).ok());
  std::vector<std::byte> longer = v5;
  longer.push_back(std::byte{0});
  EXPECT_FALSE(KallsymsTable::open(longer, 0).ok());
  for (uint32_t k : {0u, 1u, 1u << 17}) {
    std::vector<std::byte> bad = v5;
    std::memcpy(bad.data() + 28, &k, sizeof k);
    EXPECT_FALSE(KallsymsTable::open(bad, 0).ok()) << k;
  }
  // Counts that the blocks cannot hold, one that wraps around included
  // (with no block at all, a wrapped count once passed for 0 symbols).
  for (uint64_t count : {uint64_t{0}, uint64_t{4096}, uint64_t{5121}, ~uint64_t{0}}) {
    std::vector<std::byte> bad = v5;
    std::memcpy(bad.data() + 8, &count, sizeof count);
    EXPECT_FALSE(KallsymsTable::open(bad, 0).ok()) << count;
  }
  {
    std::vector<std::byte> none(v5.begin(), v5.begin() + 40);
    const uint64_t count = ~uint64_t{0};
    const uint32_t zero = 0, two = 2;
    std::memcpy(none.data() + 8, &count, sizeof count);
    std::memcpy(none.data() + 24, &zero, sizeof zero);
    std::memcpy(none.data() + 28, &two, sizeof two);
    std::memcpy(none.data() + 32, &zero, sizeof zero);
    std::memcpy(none.data() + 36, &zero, sizeof zero);
    EXPECT_FALSE(KallsymsTable::open(none, 0).ok());
  }

  // Block 3's frame, its compressed bytes past the frame header scrambled.
  const size_t k = per_block(v5);
  ASSERT_GE(blocks(v5), 5u);
  const size_t b3 = block_frame_at(v5, 3), b4 = block_frame_at(v5, 4);
  std::vector<std::byte> bad = v5;
  for (size_t at = b3 + 12; at < b4 - 4; at++) bad[at] = std::byte{0xff};
  auto t = KallsymsTable::open(bad, 1000);
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  EXPECT_EQ(t->floor(good->addr(1)), 1u);
  EXPECT_EQ(t->name(1), good->name(1));
  EXPECT_FALSE(t->damage().has_value());
  EXPECT_EQ(t->floor(good->addr(3 * k + 1)), t->size());
  EXPECT_EQ(t->name(3 * k + 1), "");
  ASSERT_TRUE(t->damage().has_value());
  EXPECT_EQ(t->damage()->offset, 1000 + b3) << t->damage()->to_string();
  EXPECT_NE(t->damage()->message.find("block 3"), std::string::npos) << t->damage()->to_string();
  EXPECT_EQ(t->floor(good->addr(4 * k + 1)), 4 * k + 1);
  EXPECT_EQ(t->name(4 * k), good->name(4 * k));
  EXPECT_EQ(t->blocks_decoded(), 2u);
}

}  // namespace
}  // namespace bpfprof::perfdata
