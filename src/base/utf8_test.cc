// SPDX-License-Identifier: Apache-2.0
#include "base/utf8.h"

#include <gtest/gtest.h>

namespace bpfprof {
namespace {

TEST(Utf8, ValidTextIsUnchanged) {
  for (std::string s : {"", "burn_step", "ünï\"q", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "a\x7F"}) {
    EXPECT_EQ(valid_utf8(s), s);
  }
}

TEST(Utf8, InvalidBytesBecomeReplacementCharacters) {
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(valid_utf8("aaaaaaaaaaaaaa\xC3"), "aaaaaaaaaaaaaa" + r);  // cut comm
  EXPECT_EQ(valid_utf8("x\xFFy"), "x" + r + "y");
  EXPECT_EQ(valid_utf8("\xC0\xAF"), r + r);                  // overlong '/'
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), r + r + r);          // surrogate
  EXPECT_EQ(valid_utf8("\xF4\x90\x80\x80"), r + r + r + r);  // above U+10FFFF
  EXPECT_EQ(valid_utf8("\xE2\x82"), r + r);                  // cut sequence at the end
}

}  // namespace
}  // namespace bpfprof
