// SPDX-License-Identifier: Apache-2.0
// C++ names shown without their parameters, as perf shows them, and with
// them on request.
#include "symbols/demangle.h"

#include <gtest/gtest.h>

namespace bpfprof::symbols {
namespace {

TEST(DemangleTest, ShortFormDropsParametersQualifiersAndTemplateReturnType) {
  EXPECT_EQ(without_parameters("RingBuffer::peek() const"), "RingBuffer::peek");
  EXPECT_EQ(without_parameters("std::vector<int, std::allocator<int> >::push_back(int const&)"),
            "std::vector<int, std::allocator<int> >::push_back");
  EXPECT_EQ(without_parameters("int f<int>(int)"), "f<int>");
  EXPECT_EQ(without_parameters("(anonymous namespace)::g(char*) [clone .cold]"),
            "(anonymous namespace)::g");
  EXPECT_EQ(without_parameters("A::operator()(int) &&"), "A::operator()");
  EXPECT_EQ(without_parameters("plain_c_name"), "plain_c_name");
  // A thunk keeps its target's signature.
  EXPECT_EQ(without_parameters("non-virtual thunk to A::f(int)"), "non-virtual thunk to A::f(int)");
}

TEST(DemangleTest, MangledNamesShortAndFull) {
  EXPECT_EQ(demangle("_ZNK10RingBuffer4peekEv", false).value_or("?"), "RingBuffer::peek");
  EXPECT_EQ(demangle("_ZNK10RingBuffer4peekEv", true).value_or("?"), "RingBuffer::peek() const");
  EXPECT_EQ(demangle("_Z1fIiEiT_", false).value_or("?"), "f<int>");
  EXPECT_FALSE(demangle("_Znot a name", false).has_value());
}

}  // namespace
}  // namespace bpfprof::symbols
