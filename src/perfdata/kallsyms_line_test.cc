// SPDX-License-Identifier: Apache-2.0
// One /proc/kallsyms line, as record and the snapshot table read it.
#include "perfdata/kallsyms_line.h"

#include <gtest/gtest.h>

namespace bpfprof::perfdata {
namespace {

TEST(KallsymsLineTest, ParsesCoreAndModuleLines) {
  auto l = parse_kallsyms_line("ffffffff81000000 T _text");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->addr, 0xffffffff81000000u);
  EXPECT_EQ(l->type, 'T');
  EXPECT_EQ(l->name, "_text");
  EXPECT_EQ(l->module, "");
  l = parse_kallsyms_line("ffffffffc0a01000 t nf_hook\t[nf_tables]");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->name, "nf_hook");
  EXPECT_EQ(l->module, "nf_tables");
  l = parse_kallsyms_line("0000000000000000 A fixed_percpu_data\r");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->name, "fixed_percpu_data");
}

// Fields split on runs of blanks (spaces, tabs, a trailing \r or \n).
TEST(KallsymsLineTest, FieldsAreSplitOnRunsOfBlanks) {
  for (const char* line : {"ffffffffc0100000 t e1000_probe\t[e1000]\n",
                           "  ffffffffc0100000 \t t  e1000_probe \t[e1000]  \r\n"}) {
    SCOPED_TRACE(line);
    auto l = parse_kallsyms_line(line);
    ASSERT_TRUE(l);
    EXPECT_EQ(l->addr, 0xffffffffc0100000u);
    EXPECT_EQ(l->type, 't');
    EXPECT_EQ(l->name, "e1000_probe");
    EXPECT_EQ(l->module, "e1000");
  }
}

TEST(KallsymsLineTest, RefusesLinesWithoutAddressTypeAndName) {
  for (const char* bad : {"garbage", "", "zz T x", "ffffffff81000000 T", " \t ",
                          "ffffffff81000000 TT name"}) {
    EXPECT_FALSE(parse_kallsyms_line(bad)) << bad;
  }
}

}  // namespace
}  // namespace bpfprof::perfdata
