// SPDX-License-Identifier: Apache-2.0
// annotate's building blocks on bytes built here: capstone on known x86-64
// and arm64 sequences, source lines from a hand-built bpf_prog_info (line
// info + jited line info + a tiny BTF), sample counts per instruction, name
// suggestions, and the JSON shape.
#include <linux/btf.h>

#include <cstring>
#include <numeric>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "annotate/annotate.h"

namespace bpfprof::annotate {
namespace {

uint32_t total_size(const std::vector<Insn>& insns) {
  return std::accumulate(insns.begin(), insns.end(), 0u,
                         [](uint32_t s, const Insn& i) { return s + i.size; });
}

TEST(DisasmTest, X86_64KnownBytes) {
  // push rbp; mov rbp, rsp; 0x06 (invalid in 64-bit mode); nop dword ptr [rax+rax]; ret
  const std::vector<uint8_t> code = {0x55, 0x48, 0x89, 0xe5, 0x06, 0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3};
  auto insns = disassemble(Arch::kX86_64, code, 0xffffffffc0000000);
  ASSERT_TRUE(insns.ok()) << insns.error().to_string();
  ASSERT_EQ(insns->size(), 5u);
  EXPECT_EQ((*insns)[0].text, "push rbp");
  EXPECT_EQ((*insns)[1].text, "mov rbp, rsp");
  EXPECT_EQ((*insns)[1].offset, 1u);
  EXPECT_EQ((*insns)[2].text, ".byte 0x06");  // undecodable: one byte, then go on
  EXPECT_EQ((*insns)[3].text.rfind("nop", 0), 0u) << (*insns)[3].text;
  EXPECT_EQ((*insns)[3].size, 5u);
  EXPECT_EQ((*insns)[4].text, "ret");
  EXPECT_EQ(total_size(*insns), code.size());
}

TEST(DisasmTest, Arm64KnownBytes) {
  // stp x29, x30, [sp, #-0x10]!; mov x29, sp; ret; then a 2-byte tail
  const std::vector<uint8_t> code = {0xfd, 0x7b, 0xbf, 0xa9, 0xfd, 0x03, 0x00, 0x91,
                                     0xc0, 0x03, 0x5f, 0xd6, 0xaa, 0xbb};
  auto insns = disassemble(Arch::kArm64, code, 0);
  ASSERT_TRUE(insns.ok()) << insns.error().to_string();
  ASSERT_GE(insns->size(), 4u);
  EXPECT_EQ((*insns)[0].text.rfind("stp x29, x30, [sp", 0), 0u) << (*insns)[0].text;
  EXPECT_EQ((*insns)[1].text, "mov x29, sp");
  EXPECT_EQ((*insns)[2].text, "ret");
  EXPECT_EQ((*insns)[2].offset, 8u);
  EXPECT_EQ((*insns)[3].text, ".byte 0xaa");
  EXPECT_EQ(total_size(*insns), code.size());
}

TEST(DisasmTest, ArchFromTheFile) {
  EXPECT_EQ(arch_from_name("x86_64"), Arch::kX86_64);
  EXPECT_EQ(arch_from_name("aarch64"), Arch::kArm64);
  EXPECT_FALSE(arch_from_name("riscv64").has_value());
}

// A BTF blob with no types and the given string section.
bpf::BtfBlob tiny_btf(const std::string& strings) {
  btf_header h{};
  h.magic = BTF_MAGIC;
  h.version = 1;
  h.hdr_len = sizeof h;
  h.str_len = static_cast<uint32_t>(strings.size());
  bpf::BtfBlob b;
  b.id = 7;
  b.data.resize(sizeof h + strings.size());
  std::memcpy(b.data.data(), &h, sizeof h);
  std::memcpy(b.data.data() + sizeof h, strings.data(), strings.size());
  return b;
}

class AnnotateCodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Strings: 1 "f.c", 5 "ten", 9 "twelve", 16 "twenty".
    btf_ = tiny_btf(std::string("\0f.c\0ten\0twelve\0twenty\0", 23));
    // Function 0 at 0x1000: push rbp; mov rbp, rsp; nop; ret (6 bytes).
    // Function 1 at 0x2000: nop; ret (2 bytes).
    info_.jited_insns = {0x55, 0x48, 0x89, 0xe5, 0x90, 0xc3, 0x90, 0xc3};
    info_.jited_ksyms = {0x1000, 0x2000};
    info_.jited_func_lens = {6, 2};
    info_.ksym_names = {"bpf_prog_0000000000000001_main", "bpf_prog_0000000000000002_sub"};
    info_.info.btf_id = 7;
    info_.info.line_info_rec_size = sizeof(bpf_line_info);
    struct L {
      uint64_t addr;
      uint32_t str, line;
    };
    // Two entries at 0x1001: the later one (line 12) wins, as in BpfLines.
    for (L l : {L{0x1000, 5, 10}, L{0x1001, 5, 11}, L{0x1001, 9, 12}, L{0x1005, 5, 10},
                L{0x2001, 16, 20}}) {
      bpf_line_info li{0, 1, l.str, l.line << 10};
      const auto* p = reinterpret_cast<const std::byte*>(&li);
      info_.line_info.insert(info_.line_info.end(), p, p + sizeof li);
      info_.jited_line_info.push_back(l.addr);
    }
  }
  bpf::ProgInfo info_;
  bpf::BtfBlob btf_;
};

TEST_F(AnnotateCodeTest, InstructionsUnderTheirLines) {
  auto fns = build_functions(info_, &btf_, Arch::kX86_64);
  ASSERT_TRUE(fns.ok()) << fns.error().to_string();
  ASSERT_EQ(fns->size(), 2u);
  const AnnotatedFunction& f0 = (*fns)[0];
  EXPECT_EQ(f0.name, "bpf_prog_0000000000000001_main");
  ASSERT_EQ(f0.blocks.size(), 3u);
  EXPECT_EQ(f0.blocks[0].line, 10u);
  EXPECT_EQ(f0.blocks[0].file, "f.c");
  EXPECT_EQ(f0.blocks[0].text, "ten");
  EXPECT_EQ(f0.blocks[1].line, 12u);  // mov and nop: between 0x1001 and 0x1005
  EXPECT_EQ(f0.blocks[1].insns.size(), 2u);
  EXPECT_EQ(f0.blocks[2].line, 10u);  // ret: line 10 again
  const AnnotatedFunction& f1 = (*fns)[1];
  ASSERT_EQ(f1.blocks.size(), 2u);
  EXPECT_FALSE(f1.blocks[0].line.has_value());  // before the function's first line entry
  EXPECT_EQ(f1.blocks[1].line, 20u);
  EXPECT_EQ(f1.blocks[1].text, "twenty");
}

TEST_F(AnnotateCodeTest, SamplesPerInstructionAndLineTotals) {
  auto fns = build_functions(info_, &btf_, Arch::kX86_64);
  ASSERT_TRUE(fns.ok());
  AnnotatedFunction& f = (*fns)[0];
  EXPECT_TRUE(add_samples(f, 1, 3));   // mov
  EXPECT_TRUE(add_samples(f, 2, 1));   // inside mov
  EXPECT_TRUE(add_samples(f, 0, 1));   // push
  EXPECT_TRUE(add_samples(f, 5, 2));   // ret
  EXPECT_FALSE(add_samples(f, 6, 1));  // past the end
  finish_counts(f);
  EXPECT_EQ(f.samples, 7u);
  EXPECT_EQ(f.blocks[1].insns[0].samples, 4u);
  ASSERT_EQ(f.line_totals.size(), 2u);
  EXPECT_EQ(f.line_totals[0].line, 12u);
  EXPECT_EQ(f.line_totals[0].samples, 4u);
  EXPECT_EQ(f.line_totals[1].line, 10u);
  EXPECT_EQ(f.line_totals[1].samples, 3u);  // both blocks of line 10
}

TEST(CallTargetTest, DirectCallsOnly) {
  EXPECT_EQ(call_target("call 0xffffffff81523bd0"), 0xffffffff81523bd0u);
  EXPECT_EQ(call_target("bl #0xffff800080123456"), 0xffff800080123456u);
  EXPECT_FALSE(call_target("call rax").has_value());
  EXPECT_FALSE(call_target("call qword ptr [rip + 0x10]").has_value());
  EXPECT_FALSE(call_target("call 0x").has_value());
  EXPECT_FALSE(call_target("call 0x1ffffffffffffffff").has_value());  // 17 digits
  EXPECT_FALSE(call_target("jmp 0xffffffff81523bd0").has_value());
}

TEST(CalleeSamplesTest, OnTheCallEndingAtTheReturnAddress) {
  AnnotatedFunction f;
  f.len = 16;
  LineBlock& b = f.blocks.emplace_back();
  b.insns = {{.offset = 0, .size = 3, .text = "mov rbp, rsp"},
             {.offset = 3, .size = 5, .text = "call 0xffffffff81000000"},
             {.offset = 8, .size = 5, .text = "call 0xffffffff81000100"},
             {.offset = 13, .size = 3, .text = "mov rax, rbx"}};
  EXPECT_TRUE(add_callee_samples(f, 8, 2));    // returns after the first call
  EXPECT_TRUE(add_callee_samples(f, 13, 1));   // after the second
  EXPECT_FALSE(add_callee_samples(f, 3, 1));   // after a mov: no call there
  EXPECT_FALSE(add_callee_samples(f, 10, 1));  // inside an instruction
  EXPECT_FALSE(add_callee_samples(f, 0, 1));
  EXPECT_FALSE(add_callee_samples(f, 17, 1));  // past the end
  finish_counts(f);
  EXPECT_EQ(b.insns[1].callee_samples, 2u);
  EXPECT_EQ(b.insns[2].callee_samples, 1u);
  EXPECT_EQ(f.callee_samples, 3u);
  EXPECT_EQ(f.samples, 0u);  // callees are not the program's own samples
}

TEST_F(AnnotateCodeTest, NoBtfStillDisassembles) {
  auto fns = build_functions(info_, nullptr, Arch::kX86_64);
  ASSERT_TRUE(fns.ok());
  ASSERT_EQ((*fns)[0].blocks.size(), 1u);
  EXPECT_FALSE((*fns)[0].blocks[0].line.has_value());
  EXPECT_EQ((*fns)[0].blocks[0].insns.size(), 4u);
}

TEST_F(AnnotateCodeTest, LengthsBeyondTheImageAreAnError) {
  info_.jited_func_lens = {6, 200};
  auto fns = build_functions(info_, &btf_, Arch::kX86_64);
  ASSERT_FALSE(fns.ok());
  EXPECT_EQ(fns.error().code, Errc::kBadRecord);
}

TEST_F(AnnotateCodeTest, JsonShapeAndText) {
  auto fns = build_functions(info_, &btf_, Arch::kX86_64);
  ASSERT_TRUE(fns.ok());
  add_samples((*fns)[0], 1, 3);
  for (AnnotatedFunction& f : *fns) finish_counts(f);
  Annotation a;
  a.query = "main";
  a.arch = "x86_64";
  a.total_samples = 10;
  Listing& l = a.listings.emplace_back();
  l.name = "main";
  l.tag = "0000000000000001";
  l.ids = {5, 9};
  l.code_id = 5;
  l.samples = 3;
  l.has_lines = true;
  l.functions = std::move(fns).value();

  auto j = nlohmann::json::parse(render_annotate_json(a));
  EXPECT_EQ(j["selected_by"], "name");
  ASSERT_EQ(j["programs"].size(), 1u);
  const auto& p = j["programs"][0];
  EXPECT_EQ(p["ids"], nlohmann::json({5, 9}));
  EXPECT_EQ(p["code_id"], 5);
  EXPECT_TRUE(p["unavailable"].is_null());
  ASSERT_EQ(p["functions"].size(), 2u);
  const auto& f0 = p["functions"][0];
  EXPECT_EQ(f0["len"], 6);
  EXPECT_EQ(f0["samples"], 3);
  const auto& hot = f0["lines"][1];
  EXPECT_EQ(hot["file"], "f.c");
  EXPECT_EQ(hot["line"], 12);
  EXPECT_EQ(hot["samples"], 3);
  EXPECT_EQ(hot["insns"][0]["asm"], "mov rbp, rsp");
  EXPECT_EQ(hot["insns"][0]["offset"], 1);
  EXPECT_EQ(hot["insns"][0]["samples"], 3);
  EXPECT_EQ(hot["insns"][0]["percent"], 100.0);
  EXPECT_TRUE(p["functions"][1]["lines"][0]["line"].is_null());
  EXPECT_EQ(f0["line_totals"][0]["line"], 12);

  const std::string text = render_annotate_text(a, /*color=*/false);
  EXPECT_NE(text.find("f.c:12"), std::string::npos) << text;
  EXPECT_NE(text.find("mov rbp, rsp"), std::string::npos);
  EXPECT_NE(text.find("ids 5, 9"), std::string::npos) << text;
  EXPECT_EQ(text.find('\033'), std::string::npos);  // no colour off a terminal
  EXPECT_NE(render_annotate_text(a, /*color=*/true).find('\033'), std::string::npos);
}

TEST(ClosestNamesTest, EditDistanceAndContainment) {
  const std::vector<std::string> names = {"long_burner", "burner", "bpf2bpf",
                                          "bpf_prog_0123456789abcdef_long_burner", "42", "burner"};
  auto near = closest_names("long_burnr", names, 2);
  ASSERT_EQ(near.size(), 2u);
  EXPECT_EQ(near[0], "long_burner");
  auto contains = closest_names("burner", names, 10);
  EXPECT_EQ(contains.size(), 5u);  // no repeats
  EXPECT_EQ(closest_names("43", names, 1), std::vector<std::string>{"42"});
}

TEST(AnnotateTest, ImmediateLoadsOfAMapsAddressNameTheMap) {
  EXPECT_EQ(imm64_operand("movabs rdi, 0xffff888102f4c000"), 0xffff888102f4c000u);
  EXPECT_EQ(imm64_operand("movabs rax, 0x1"), 1u);
  EXPECT_FALSE(imm64_operand("mov edi, 0x10"));
  EXPECT_FALSE(imm64_operand("movabs rdi, qword ptr [0x1000]"));
  const std::vector<bpf::MapInfo> maps = {
      {14, BPF_MAP_TYPE_HASH, 4, 8, 1024, 0, "counts", 0xffff888102f4c000, 0},
      {15, BPF_MAP_TYPE_ARRAY, 4, 12, 2, 0, "prog.bss", 0xffff888102f50000, 0xffff888102f50150}};
  EXPECT_EQ(map_at(maps, 0xffff888102f4c000), "map[id:14 counts]");
  EXPECT_EQ(map_at(maps, 0xffff888102f50000), "map[id:15 prog.bss]");
  EXPECT_EQ(map_at(maps, 0xffff888102f50150), "map[id:15 prog.bss]");
  // Two values of 12 bytes, each rounded up to 16: the second one's bytes.
  EXPECT_EQ(map_at(maps, 0xffff888102f50150 + 0x14), "map[id:15 prog.bss]+0x14");
  EXPECT_EQ(map_at(maps, 0xffff888102f50150 + 0x20), "");
  EXPECT_EQ(map_at(maps, 0xffff888102f4c008), "");  // inside struct bpf_map: not a load of it
  EXPECT_EQ(map_at(maps, 0), "");
}

// arm64 instruction words (64-bit forms) for the immediate moves.
uint32_t movz(unsigned rd, uint32_t imm16, unsigned shift) {
  return 0xd2800000u | (shift / 16) << 21 | imm16 << 5 | rd;
}
uint32_t movn(unsigned rd, uint32_t imm16, unsigned shift) {
  return 0x92800000u | (shift / 16) << 21 | imm16 << 5 | rd;
}
uint32_t movk(unsigned rd, uint32_t imm16, unsigned shift) {
  return 0xf2800000u | (shift / 16) << 21 | imm16 << 5 | rd;
}
std::vector<uint8_t> words(std::initializer_list<uint32_t> ws) {
  std::vector<uint8_t> out;
  for (uint32_t w : ws) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(w >> (8 * i)));
  }
  return out;
}

TEST(AnnotateTest, Arm64MovMovkSequencesNameTheMap) {
  constexpr uint64_t kCounts = 0xffff0000c2345000;  // struct bpf_map
  constexpr uint64_t kBss = 0xffff0000c2346150;     // an array map's first value
  // As the arm64 JIT builds them: a kernel address with a fixed movn and
  // three movk (emit_addr_mov_i64), and any value from its highest
  // non-trivial piece down (emit_a64_mov_i64: movz or movn, then movk).
  const std::vector<uint8_t> code =
      words({movn(1, ~kCounts & 0xffff, 0), movk(1, (kCounts >> 16) & 0xffff, 16),
             movk(1, (kCounts >> 32) & 0xffff, 32), movk(1, (kCounts >> 48) & 0xffff, 48),
             0xaa0003e2,  // mov x2, x0: no immediate, ends nothing of x1's
             movn(2, 0xffff - 0x0000, 32), movk(2, (kBss + 8) >> 16 & 0xffff, 16),
             movk(2, (kBss + 8) & 0xffff, 0), movz(3, 0x1234, 16),
             movk(4, 0x1, 0),  // movk of another register: not x3's
             movz(5, 0x10, 0)});
  auto insns = disassemble(Arch::kArm64, code, 0);
  ASSERT_TRUE(insns.ok()) << insns.error().to_string();
  std::vector<std::string> texts;
  std::string listing;
  for (const Insn& i : *insns) {
    texts.push_back(i.text);
    listing += i.text + "\n";
  }
  ASSERT_EQ(texts.size(), 11u) << listing;
  for (size_t k : {0, 5, 8, 10}) {
    EXPECT_TRUE(texts[k].starts_with("mov")) << listing;
  }
  const auto loads = arm64_imm64_loads(texts);
  ASSERT_EQ(loads.size(), 4u) << listing;
  EXPECT_EQ(loads[0], (std::pair<size_t, uint64_t>{3, kCounts})) << listing;
  EXPECT_EQ(loads[1], (std::pair<size_t, uint64_t>{7, kBss + 8})) << listing;
  EXPECT_EQ(loads[2], (std::pair<size_t, uint64_t>{8, 0x12340000})) << listing;
  EXPECT_EQ(loads[3], (std::pair<size_t, uint64_t>{10, 0x10})) << listing;

  const std::vector<bpf::MapInfo> maps = {
      {14, BPF_MAP_TYPE_HASH, 4, 8, 1024, 0, "counts", kCounts, 0},
      {15, BPF_MAP_TYPE_ARRAY, 4, 16, 1, 0, "prog.bss", 0xffff0000c2346000, kBss}};
  EXPECT_EQ(map_at(maps, loads[0].second), "map[id:14 counts]");
  EXPECT_EQ(map_at(maps, loads[1].second), "map[id:15 prog.bss]+0x8");
}

TEST(AnnotateTest, Arm64ImmediateTextsCapstoneMayPrint) {
  const std::vector<std::string> texts = {"movz x7, #0xffff, lsl #48",
                                          "movk x7, #0x1, lsl #16",
                                          "movk x7, #0x2",
                                          "mov x8, #-0x1",
                                          "movk x8, #0x0, lsl #48",
                                          "mov w9, #0x10",
                                          "movk w9, #0x1, lsl #16",   // 32-bit: not a 64-bit load
                                          "movk x10, #0x1, lsl #16",  // no mov first
                                          "mov x11, #0x10",
                                          "mov x11, #0x20"};  // two loads of one register
  const auto loads = arm64_imm64_loads(texts);
  ASSERT_EQ(loads.size(), 4u);
  EXPECT_EQ(loads[0], (std::pair<size_t, uint64_t>{2, 0xffff000000010002}));
  EXPECT_EQ(loads[1], (std::pair<size_t, uint64_t>{4, 0x0000ffffffffffff}));
  EXPECT_EQ(loads[2], (std::pair<size_t, uint64_t>{8, 0x10}));
  EXPECT_EQ(loads[3], (std::pair<size_t, uint64_t>{9, 0x20}));
}

}  // namespace
}  // namespace bpfprof::annotate
