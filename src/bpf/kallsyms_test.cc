// SPDX-License-Identifier: Apache-2.0
// resolve_ksym_names on hand-written input (the [bpf] entries are parsed
// by host::scan_kallsyms, tested in host/kernel_maps_test.cc).
#include <cstring>

#include <gtest/gtest.h>

#include "bpf/query.h"

namespace bpfprof::bpf {
namespace {

ProgInfo two_function_prog() {
  ProgInfo p;
  std::memcpy(p.info.name, "main_fn", 8);
  p.info.tag[0] = 0xaa;
  p.jited_ksyms = {0x1000, 0x2000};
  p.prog_tags = {Tag{0x11}, Tag{0x22}};
  return p;
}

TEST(ResolveKsymNames, PrefersKallsyms) {
  ProgInfo p = two_function_prog();
  resolve_ksym_names(p, {{0x1000, "from_kallsyms"}}, nullptr);
  ASSERT_EQ(p.ksym_names.size(), 2u);
  EXPECT_EQ(p.ksym_names[0], "from_kallsyms");
  EXPECT_TRUE(ksym_names_covered(p, {{0x1000, "a"}, {0x2000, "b"}}));
  EXPECT_FALSE(ksym_names_covered(p, {{0x1000, "a"}}));
}

// Without BTF: info.tag + info.name for function 0, prog_tags[i] + "F" after.
TEST(ResolveKsymNames, ComputesKernelRuleWithoutBtf) {
  ProgInfo p = two_function_prog();
  resolve_ksym_names(p, {}, nullptr);
  ASSERT_EQ(p.ksym_names.size(), 2u);
  EXPECT_EQ(p.ksym_names[0], "bpf_prog_aa00000000000000_main_fn");
  EXPECT_EQ(p.ksym_names[1], "bpf_prog_2200000000000000_F");
  p.info.name[0] = 0;
  resolve_ksym_names(p, {}, nullptr);
  EXPECT_EQ(p.ksym_names[0], "bpf_prog_aa00000000000000");
}

TEST(ResolveKsymNames, TwoNamesAtOneAddressPicksTheRuleName) {
  ProgInfo p = two_function_prog();
  resolve_ksym_names(p,
                     {{0x1000, "bpf_prog_1100000000000000_main_fn"},
                      {0x1000, "bpf_prog_aa00000000000000_main_fn"},
                      {0x2000, "x"},
                      {0x2000, "y"}},
                     nullptr);
  EXPECT_EQ(p.ksym_names[0], "bpf_prog_aa00000000000000_main_fn");
  EXPECT_EQ(p.ksym_names[1], "x");
}

TEST(ResolveKsymNames, HiddenAddressesNeverMatch) {
  ProgInfo p = two_function_prog();
  p.jited_ksyms = {0, 0};
  resolve_ksym_names(p, {{0, "bpf_prog_hidden"}}, nullptr);
  EXPECT_NE(p.ksym_names[0], "bpf_prog_hidden");
  EXPECT_FALSE(ksym_names_covered(p, {{0, "bpf_prog_hidden"}}));
}

}  // namespace
}  // namespace bpfprof::bpf
