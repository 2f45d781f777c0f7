// SPDX-License-Identifier: Apache-2.0
#include "host/kernel_maps.h"

#include <cerrno>
#include <string>

#include <gtest/gtest.h>

namespace bpfprof::host {
namespace {

constexpr std::string_view kKallsyms =
    "0000000000000000 A fixed_percpu_data\n"
    "ffffffff81000000 T _stext\n"
    "ffffffff81000000 T _text\n"
    "ffffffff81001000 T do_one_initcall\n"
    "ffffffff82276988 T _etext\n"
    "ffffffffc0026b20 t bpf_prog_4749fad006b00537_query_main\t[bpf]\n"
    "ffffffffc0100000 t e1000_probe\t[e1000]\n";

// The production path: the scan over a kallsyms text of our own.
KallsymsScan scan(std::string_view kallsyms) { return scan_kallsyms(std::string(kallsyms)); }

TEST(KernelMapsTest, TextAndEtext) {
  auto t = scan(kKallsyms).text;
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  EXPECT_EQ(t->ref_name, "_text");
  EXPECT_EQ(t->start, 0xffffffff81000000u);
  EXPECT_EQ(t->end, 0xffffffff82276988u);
}

TEST(KernelMapsTest, StextWhenNoText) {
  auto t = scan("ffffffff81000000 T _stext\nffffffff82000000 T _etext\n").text;
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->ref_name, "_stext");
  EXPECT_EQ(t->start, 0xffffffff81000000u);
  EXPECT_EQ(t->end, 0xffffffff82000000u);
}

TEST(KernelMapsTest, HiddenAddressesAndMissingSymbols) {
  auto hidden = scan("0000000000000000 T _text\n0000000000000000 T _etext\n").text;
  ASSERT_TRUE(hidden.ok());
  EXPECT_EQ(hidden->start, 0u);
  EXPECT_EQ(hidden->end, 0u);
  auto none = scan("ffffffff81001000 T do_one_initcall\n").text;
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, Errc::kNotFound);
}

TEST(KernelMapsTest, Modules) {
  auto m = parse_modules(
      "e1000 163840 0 - Live 0xffffffffc0100000\n"
      "nf_tables 352256 3 nft_chain_nat,nft_compat, Live 0xffffffffc0200000 (E)\n"
      "broken line\n");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].name, "e1000");
  EXPECT_EQ(m[0].start, 0xffffffffc0100000u);
  EXPECT_EQ(m[0].size, 163840u);
  EXPECT_EQ(m[1].name, "nf_tables");
  EXPECT_EQ(m[1].start, 0xffffffffc0200000u);
}

TEST(KernelMapsTest, OnePassScan) {
  KallsymsScan found = scan(
      "ffffffffc0026dc0 t bpf_dispatcher_xdp\t[bpf]\n"
      "ffffffff81000000 T _text\n"
      "ffffffff82276988 T _etext\n"
      "ffffffffc0026b20 t bpf_prog_4749fad006b00537_query_main\t[bpf]\n"
      "ffffffffc0100000 t e1000_probe\t[e1000]\n");
  ASSERT_TRUE(found.text.ok());
  EXPECT_EQ(found.text->start, 0xffffffff81000000u);
  EXPECT_EQ(found.text->end, 0xffffffff82276988u);
  ASSERT_EQ(found.bpf.size(), 2u);
  EXPECT_EQ(found.bpf[0].name, "bpf_prog_4749fad006b00537_query_main");  // sorted by address
  EXPECT_EQ(found.bpf[1].name, "bpf_dispatcher_xdp");
  // The snapshot: kernel and module text, no [bpf], original lines.
  EXPECT_EQ(found.text_symbols,
            "ffffffff81000000 T _text\n"
            "ffffffff82276988 T _etext\n"
            "ffffffffc0100000 t e1000_probe\t[e1000]\n");
}

TEST(KernelMapsTest, SnapshotSkipsDataAndHiddenAddresses) {
  KallsymsScan found = scan(
      "0000000000000000 T _text\n"
      "ffffffff82000000 D jiffies\n"
      "ffffffff81000100 W weak_fn\n"
      "ffffffff81000200 r rodata\n");
  EXPECT_EQ(found.text_symbols, "ffffffff81000100 W weak_fn\n");
}


TEST(KernelMapsTest, SnapshotCompactsInPlaceAndEndsWithNewline) {
  // Skipped lines before, between and after kept ones, and a last line
  // without its newline: the snapshot is the kept lines, each ending in one.
  std::string in =
      "ffffffffc0026dc0 t bpf_dispatcher_xdp\t[bpf]\n"
      "ffffffff81000000 T _text\n"
      "ffffffff82000000 D jiffies\n"
      "0000000000000000 t hidden\n"
      "ffffffff81000100 t a_long_function_name_that_moves\n"
      "garbage\n"
      "ffffffffc0100000 t e1000_probe\t[e1000]";
  const std::string expected =
      "ffffffff81000000 T _text\n"
      "ffffffff81000100 t a_long_function_name_that_moves\n"
      "ffffffffc0100000 t e1000_probe\t[e1000]\n";
  KallsymsScan found = scan_kallsyms(std::move(in));
  EXPECT_EQ(found.text_symbols, expected);
  ASSERT_EQ(found.bpf.size(), 1u);
  EXPECT_EQ(found.bpf[0].name, "bpf_dispatcher_xdp");
  ASSERT_TRUE(found.text.ok());
  EXPECT_EQ(found.text->start, 0xffffffff81000000u);
}

TEST(KernelMapsTest, BpfEntriesSortedByAddressBadLinesSkipped) {
  KallsymsScan found = scan(
      "ffffffff81000000 T _text\n"
      "ffffffffc0026b94 t bpf_prog_2c42c2d77c6eee01_query_sub\t[bpf]\n"
      "ffffffffc0001000 t some_fn\t[ext4]\n"
      "ffffffffc0026b20 t bpf_prog_4749fad006b00537_query_main\t[bpf]\n"
      "ffffffffc0010000 t bpf_trampoline_6442453466\t[bpf]\n"
      "ffffffffc0020000 t bpf_dispatcher_xdp\t[bpf]\n"
      "garbage line\n"
      "zzzz t bad_addr\t[bpf]\n");
  ASSERT_EQ(found.bpf.size(), 4u);
  EXPECT_EQ(found.bpf[0].addr, 0xffffffffc0010000u);
  EXPECT_EQ(found.bpf[0].name, "bpf_trampoline_6442453466");
  EXPECT_EQ(found.bpf[1].name, "bpf_dispatcher_xdp");
  EXPECT_EQ(found.bpf[2].name, "bpf_prog_4749fad006b00537_query_main");
  EXPECT_EQ(found.bpf[3].addr, 0xffffffffc0026b94u);
}

TEST(KernelMapsTest, BpfEntriesWithHiddenAddresses) {
  KallsymsScan found = scan(
      "0000000000000000 T _text\n"
      "0000000000000000 t bpf_prog_4749fad006b00537_query_main\t[bpf]\n");
  ASSERT_EQ(found.bpf.size(), 1u);
  EXPECT_EQ(found.bpf[0].addr, 0u);
  EXPECT_EQ(found.bpf[0].name, "bpf_prog_4749fad006b00537_query_main");
}

TEST(KernelMapsTest, MissingKallsymsIsAnError) {
  auto k = read_kallsyms("/nonexistent/kallsyms");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.error().sys_errno, ENOENT);
}

TEST(KernelMapsTest, LiveKallsyms) {
  auto k = read_kallsyms();
  if (!k.ok()) GTEST_SKIP() << k.error().to_string();
  if (!k->text.ok()) GTEST_SKIP() << k->text.error().to_string();
  EXPECT_FALSE(k->text->ref_name.empty());
}

}  // namespace
}  // namespace bpfprof::host
