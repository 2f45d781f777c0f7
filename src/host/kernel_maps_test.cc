// SPDX-License-Identifier: Apache-2.0
#include "host/kernel_maps.h"

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

TEST(KernelMapsTest, TextAndEtext) {
  auto t = parse_kernel_text(kKallsyms);
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  EXPECT_EQ(t->ref_name, "_text");
  EXPECT_EQ(t->start, 0xffffffff81000000u);
  EXPECT_EQ(t->end, 0xffffffff82276988u);
}

TEST(KernelMapsTest, StextWhenNoText) {
  auto t = parse_kernel_text("ffffffff81000000 T _stext\nffffffff82000000 T _etext\n");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->ref_name, "_stext");
  EXPECT_EQ(t->start, 0xffffffff81000000u);
  EXPECT_EQ(t->end, 0xffffffff82000000u);
}

TEST(KernelMapsTest, HiddenAddressesAndMissingSymbols) {
  auto hidden = parse_kernel_text("0000000000000000 T _text\n0000000000000000 T _etext\n");
  ASSERT_TRUE(hidden.ok());
  EXPECT_EQ(hidden->start, 0u);
  EXPECT_EQ(hidden->end, 0u);
  auto none = parse_kernel_text("ffffffff81001000 T do_one_initcall\n");
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
  KallsymsScan scan = scan_kallsyms(
      "ffffffffc0026dc0 t bpf_dispatcher_xdp\t[bpf]\n"
      "ffffffff81000000 T _text\n"
      "ffffffff82276988 T _etext\n"
      "ffffffffc0026b20 t bpf_prog_4749fad006b00537_query_main\t[bpf]\n"
      "ffffffffc0100000 t e1000_probe\t[e1000]\n");
  ASSERT_TRUE(scan.text.ok());
  EXPECT_EQ(scan.text->start, 0xffffffff81000000u);
  EXPECT_EQ(scan.text->end, 0xffffffff82276988u);
  ASSERT_EQ(scan.bpf.size(), 2u);
  EXPECT_EQ(scan.bpf[0].name, "bpf_prog_4749fad006b00537_query_main");  // sorted by address
  EXPECT_EQ(scan.bpf[1].name, "bpf_dispatcher_xdp");
  // The snapshot: kernel and module text, no [bpf], original lines.
  EXPECT_EQ(scan.text_symbols,
            "ffffffff81000000 T _text\n"
            "ffffffff82276988 T _etext\n"
            "ffffffffc0100000 t e1000_probe\t[e1000]\n");
}

TEST(KernelMapsTest, SnapshotSkipsDataAndHiddenAddresses) {
  KallsymsScan scan = scan_kallsyms(
      "0000000000000000 T _text\n"
      "ffffffff82000000 D jiffies\n"
      "ffffffff81000100 W weak_fn\n"
      "ffffffff81000200 r rodata\n");
  EXPECT_EQ(scan.text_symbols, "ffffffff81000100 W weak_fn\n");
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
  EXPECT_EQ(scan_kallsyms(in).text_symbols, expected);
  KallsymsScan scan = scan_kallsyms_in_place(std::move(in));
  EXPECT_EQ(scan.text_symbols, expected);
  ASSERT_EQ(scan.bpf.size(), 1u);
  EXPECT_EQ(scan.bpf[0].name, "bpf_dispatcher_xdp");
  ASSERT_TRUE(scan.text.ok());
  EXPECT_EQ(scan.text->start, 0xffffffff81000000u);
}

TEST(KernelMapsTest, LiveKallsyms) {
  auto t = read_kernel_text();
  if (!t.ok()) GTEST_SKIP() << t.error().to_string();
  EXPECT_FALSE(t->ref_name.empty());
}

}  // namespace
}  // namespace bpfprof::host
