// SPDX-License-Identifier: Apache-2.0
// pair_map_loads_x86_64 on translated instructions and movabs lists built
// here, and parse_movabs on what capstone prints for movabs bytes.
#include "bpf/map_loads.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "bpf/disasm.h"

namespace bpfprof::bpf {
namespace {

constexpr uint64_t kCounts = 0xffff888102f4c000;  // a struct bpf_map
constexpr uint64_t kBss = 0xffff888102f50150;     // an array map's first value

// The two halves of a 64-bit load of `value` into `dst` (src 0: a constant).
void load(std::vector<bpf_insn>& to, uint8_t dst, uint64_t value, uint8_t src = 0) {
  bpf_insn lo{};
  lo.code = BPF_LD | BPF_IMM | BPF_DW;
  lo.dst_reg = dst;
  lo.src_reg = src;
  lo.imm = static_cast<int32_t>(static_cast<uint32_t>(value));
  bpf_insn hi{};
  hi.imm = static_cast<int32_t>(static_cast<uint32_t>(value >> 32));
  to.push_back(lo);
  to.push_back(hi);
}

// How the kernel dumps a load of map `id` (+ `off` into its values).
void map_load(std::vector<bpf_insn>& to, uint8_t dst, uint32_t id) {
  load(to, dst, id, BPF_PSEUDO_MAP_FD);
}
void value_load(std::vector<bpf_insn>& to, uint8_t dst, uint32_t id, uint32_t off) {
  load(to, dst, uint64_t{off} << 32 | id, BPF_PSEUDO_MAP_VALUE);
}

void other(std::vector<bpf_insn>& to) {
  bpf_insn mov{};
  mov.code = BPF_ALU64 | BPF_MOV | BPF_K;
  mov.dst_reg = 0;
  mov.imm = 1;
  to.push_back(mov);
}

TEST(PairMapLoads, MapLoadsTakeTheirMovabsInOrder) {
  std::vector<bpf_insn> x;
  map_load(x, 1, 14);  // r1 = map[14]
  other(x);
  value_load(x, 2, 15, 0x14);  // r2 = &value of map[15] + 0x14
  map_load(x, 1, 14);
  const std::vector<Movabs> m = {{"rdi", kCounts}, {"rsi", kBss + 0x14}, {"rdi", kCounts}};
  const auto found = pair_map_loads_x86_64(x, m);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->addr, (std::map<uint32_t, uint64_t>{{14, kCounts}}));
  EXPECT_EQ(found->value_addr, (std::map<uint32_t, uint64_t>{{15, kBss}}));
}

TEST(PairMapLoads, SkipsTheJitsOwnMovabs) {
  std::vector<bpf_insn> x;
  map_load(x, 1, 14);
  // The JIT's own movabs (private stack, arena base) use registers no BPF
  // register lives in.
  const std::vector<Movabs> m = {
      {"r12", 0xffffc90000000000}, {"r9", 0xffff888100000000}, {"rdi", kCounts}};
  const auto found = pair_map_loads_x86_64(x, m);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->addr.at(14), kCounts);
}

TEST(PairMapLoads, ConstantsMeetTheirOwnMovabs) {
  std::vector<bpf_insn> x;
  load(x, 0, 0x10);                // fits 32 bits: mov, no movabs
  load(x, 0, 0xfffffffffffffffe);  // -2: sign-extended mov, no movabs
  load(x, 1, 0x1234567890abcdef);  // needs a movabs
  map_load(x, 1, 14);
  const std::vector<Movabs> m = {{"rdi", 0x1234567890abcdef}, {"rdi", kCounts}};
  const auto found = pair_map_loads_x86_64(x, m);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->addr.at(14), kCounts);
  // Had the constant not been matched by value, the map would take it.
  const std::vector<Movabs> jit_first = {
      {"rdi", 0xffff888100000000}, {"rdi", 0x1234567890abcdef}, {"rdi", kCounts}};
  const auto skipped = pair_map_loads_x86_64(x, jit_first);
  ASSERT_TRUE(skipped);
  EXPECT_EQ(skipped->addr.at(14), kCounts);
}

TEST(PairMapLoads, SubprogramAddressesNeedNoMovabs) {
  std::vector<bpf_insn> x;
  value_load(x, 1, 15, 4);
  // r2 = subprog[+23], dumped as offset 23 with 1 in the second half (as
  // bpf_loop's callback is): the JIT loads it with a sign-extended mov.
  load(x, 2, uint64_t{1} << 32 | 23, BPF_PSEUDO_FUNC);
  map_load(x, 2, 14);
  const auto found =
      pair_map_loads_x86_64(x, std::vector<Movabs>{{"rdi", kBss + 4}, {"rsi", kCounts}});
  ASSERT_TRUE(found);
  EXPECT_EQ(found->value_addr.at(15), kBss);
  EXPECT_EQ(found->addr.at(14), kCounts);
}

TEST(PairMapLoads, DisagreementFillsNothing) {
  std::vector<bpf_insn> x;
  map_load(x, 1, 14);
  map_load(x, 2, 14);
  // One map, two addresses.
  EXPECT_FALSE(pair_map_loads_x86_64(x, std::vector<Movabs>{{"rdi", kCounts}, {"rsi", kBss}}));
  // A load without its movabs.
  EXPECT_FALSE(pair_map_loads_x86_64(x, std::vector<Movabs>{{"rdi", kCounts}}));
  // A constant that needs a movabs the image does not have.
  std::vector<bpf_insn> c;
  load(c, 3, 0x1234567890abcdef);
  EXPECT_FALSE(pair_map_loads_x86_64(c, std::vector<Movabs>{{"rdx", 0x1234567890abcdee}}));
  // A value offset past the address it came with.
  std::vector<bpf_insn> v;
  value_load(v, 1, 15, 0x100);
  EXPECT_FALSE(pair_map_loads_x86_64(v, std::vector<Movabs>{{"rdi", 0x10}}));
  // A source whose value the dump does not give (BPF_PSEUDO_BTF_ID stays
  // in no dump: the verifier clears it).
  std::vector<bpf_insn> b;
  load(b, 1, 0x1234567890abcdef, BPF_PSEUDO_BTF_ID);
  EXPECT_FALSE(pair_map_loads_x86_64(b, std::vector<Movabs>{{"rdi", 0x1234567890abcdef}}));
  // A register the JIT has no place for.
  std::vector<bpf_insn> r;
  map_load(r, 11, 14);
  EXPECT_FALSE(pair_map_loads_x86_64(r, std::vector<Movabs>{{"r10", kCounts}}));
}

TEST(PairMapLoads, NoLoadsNothingFound) {
  std::vector<bpf_insn> x;
  other(x);
  const auto found = pair_map_loads_x86_64(x, std::vector<Movabs>{{"rdi", kCounts}});
  ASSERT_TRUE(found);
  EXPECT_TRUE(found->addr.empty() && found->value_addr.empty());
}

TEST(PairMapLoads, ApplySetsOnlyNamedMaps) {
  std::vector<MapInfo> maps(3);
  maps[0].id = 14;
  maps[1].id = 15;
  maps[2].id = 16;
  MapAddresses found;
  found.addr[14] = kCounts;
  found.value_addr[15] = kBss;
  found.addr[99] = 0xffff888100000000;  // not the program's: ignored
  EXPECT_EQ(apply_map_addresses(maps, found), 2u);
  EXPECT_EQ(maps[0].addr, kCounts);
  EXPECT_EQ(maps[1].value_addr, kBss);
  EXPECT_EQ(maps[1].addr, 0u);
  EXPECT_EQ(maps[2].addr, 0u);
}

TEST(ParseMovabs, WhatCapstonePrints) {
  // movabs rdi, 0xffff888102f4c000; movabs r13, 0x8000000000000000;
  // mov edi, 0x10
  const std::vector<uint8_t> code = {0x48, 0xbf, 0x00, 0xc0, 0xf4, 0x02, 0x81, 0x88, 0xff,
                                     0xff, 0x49, 0xbd, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                     0x00, 0x80, 0xbf, 0x10, 0x00, 0x00, 0x00};
  auto insns = disassemble(Arch::kX86_64, code, 0);
  if (!insns.ok()) GTEST_SKIP() << insns.error().to_string();
  ASSERT_EQ(insns->size(), 3u);
  EXPECT_EQ(parse_movabs((*insns)[0].text), (Movabs{"rdi", 0xffff888102f4c000}))
      << (*insns)[0].text;
  EXPECT_EQ(parse_movabs((*insns)[1].text), (Movabs{"r13", 0x8000000000000000}))
      << (*insns)[1].text;
  EXPECT_FALSE(parse_movabs((*insns)[2].text)) << (*insns)[2].text;
  EXPECT_FALSE(parse_movabs("movabs rax, qword ptr [0x1000]"));
}

}  // namespace
}  // namespace bpfprof::bpf
