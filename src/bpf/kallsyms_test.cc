// SPDX-License-Identifier: Apache-2.0
// read_kallsyms_bpf and resolve_ksym_names on hand-written input.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>

#include "bpf/query.h"

namespace bpfprof::bpf {
namespace {

// A kallsyms-format file in /tmp, removed when the test ends.
class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/bpfprof_kallsyms_XXXXXX";
    int fd = mkstemp(name);
    EXPECT_GE(fd, 0);
    close(fd);
    path_ = name;
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(Kallsyms, KeepsOnlyBpfEntriesSortedByAddress) {
  TempFile f(
      "ffffffff81000000 T _text\n"
      "ffffffffc0026b94 t bpf_prog_2c42c2d77c6eee01_query_sub\t[bpf]\n"
      "ffffffffc0001000 t some_fn\t[ext4]\n"
      "ffffffffc0026b20 t bpf_prog_4749fad006b00537_query_main\t[bpf]\n"
      "ffffffffc0010000 t bpf_trampoline_6442453466\t[bpf]\n"
      "ffffffffc0020000 t bpf_dispatcher_xdp\t[bpf]\n"
      "garbage line\n"
      "zzzz t bad_addr\t[bpf]\n");
  auto ks = read_kallsyms_bpf(f.path());
  ASSERT_TRUE(ks.ok()) << ks.error().to_string();
  ASSERT_EQ(ks->size(), 4u);
  EXPECT_EQ((*ks)[0].addr, 0xffffffffc0010000u);
  EXPECT_EQ((*ks)[0].name, "bpf_trampoline_6442453466");
  EXPECT_EQ((*ks)[1].name, "bpf_dispatcher_xdp");
  EXPECT_EQ((*ks)[2].name, "bpf_prog_4749fad006b00537_query_main");
  EXPECT_EQ((*ks)[3].addr, 0xffffffffc0026b94u);
}

TEST(Kallsyms, ToleratesHiddenAddresses) {
  TempFile f(
      "0000000000000000 T _text\n"
      "0000000000000000 t bpf_prog_4749fad006b00537_query_main\t[bpf]\n");
  auto ks = read_kallsyms_bpf(f.path());
  ASSERT_TRUE(ks.ok()) << ks.error().to_string();
  ASSERT_EQ(ks->size(), 1u);
  EXPECT_EQ((*ks)[0].addr, 0u);
}

TEST(Kallsyms, MissingFileIsAnError) {
  auto ks = read_kallsyms_bpf("/nonexistent/kallsyms");
  ASSERT_FALSE(ks.ok());
  EXPECT_EQ(ks.error().sys_errno, ENOENT);
}

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
