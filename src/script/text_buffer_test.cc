// SPDX-License-Identifier: Apache-2.0
// script's text buffer and field writers against snprintf: every width,
// padding and length edge the line formats use (the writers store whole
// blocks past their end, so each is written into a buffer with room for it).
#include "script/text_buffer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace bpfprof::script {
namespace {

// What a writer produced: it is called with a pointer into a buffer of
// kPad spare bytes, and its returned end says how much is the field.
template <typename Write>
std::string written(Write write) {
  TextBuffer buffer;
  char* p = buffer.reserve(64 + kPad);
  buffer.commit(write(p));
  return std::string(buffer.data(), buffer.size());
}

std::string printf_string(const char* format, auto... args) {
  char out[128];
  std::snprintf(out, sizeof out, format, args...);
  return out;
}

std::vector<uint64_t> edge_values() {
  std::vector<uint64_t> values = {0, std::numeric_limits<uint64_t>::max()};
  for (uint64_t p = 1; p <= 10000000000000000000ull; p *= 10) {
    values.push_back(p - 1);
    values.push_back(p);
    values.push_back(p + 1);
    if (p > std::numeric_limits<uint64_t>::max() / 10) break;
  }
  for (int bits = 1; bits < 64; bits++) {
    values.push_back((uint64_t{1} << bits) - 1);
    values.push_back(uint64_t{1} << bits);
  }
  values.push_back(0xdeadbeefcafef00dull);
  values.push_back(0xabcdefull);
  return values;
}

TEST(TextBufferTest, AppendOfNothingOnANewBufferIsEmpty) {
  TextBuffer buffer;
  buffer.append("");
  EXPECT_EQ(buffer.size(), 0u);
  buffer.append("abc");
  buffer.append("");
  EXPECT_EQ(std::string(buffer.data(), buffer.size()), "abc");
}

TEST(TextBufferTest, GrowsKeepingWhatWasWrittenAndClearKeepsCapacity) {
  TextBuffer buffer;
  std::string expected;
  for (int i = 0; i < 20000; i++) {
    const std::string line = "line " + std::to_string(i) + "\n";
    buffer.append(line);
    expected += line;
  }
  ASSERT_EQ(buffer.size(), expected.size());
  EXPECT_EQ(std::string(buffer.data(), buffer.size()), expected);
  const char* before = buffer.data();
  buffer.clear();
  EXPECT_EQ(buffer.size(), 0u);
  buffer.append("again");
  EXPECT_EQ(buffer.data(), before);  // no new allocation after clear()
  EXPECT_EQ(std::string(buffer.data(), buffer.size()), "again");
}

TEST(TextBufferTest, DecimalLikePrintfAtEveryWidth) {
  for (uint64_t v : edge_values()) {
    SCOPED_TRACE(v);
    EXPECT_EQ(written([&](char* p) { return put_uint(p, v); }),
              printf_string("%llu", static_cast<unsigned long long>(v)));
    for (unsigned width = 0; width <= kPad; width++) {
      const auto u = static_cast<unsigned long long>(v);
      const int w = static_cast<int>(width);
      EXPECT_EQ(written([&](char* p) { return put_uint(p, v, width); }),
                printf_string("%*llu", w, u));
      EXPECT_EQ(written([&](char* p) { return put_uint(p, v, width, '0'); }),
                printf_string("%0*llu", w, u));
      EXPECT_EQ(written([&](char* p) { return put_uint(p, v, width, ' ', true); }),
                printf_string("%-*llu", w, u));
    }
  }
}

TEST(TextBufferTest, SignedDecimalLikePrintfAtEveryWidth) {
  for (const int64_t v : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{-9}, int64_t{-10},
                          int64_t{-2147483648}, int64_t{2147483647}, INT64_MIN, INT64_MAX}) {
    SCOPED_TRACE(v);
    const auto l = static_cast<long long>(v);
    for (unsigned width = 0; width <= kPad; width++) {
      const int w = static_cast<int>(width);
      EXPECT_EQ(written([&](char* p) { return put_int(p, v, width); }),
                printf_string("%*lld", w, l));
      EXPECT_EQ(written([&](char* p) { return put_int(p, v, width, true); }),
                printf_string("%-*lld", w, l));
    }
  }
}

TEST(TextBufferTest, HexLikePrintfAtEveryWidth) {
  for (uint64_t v : edge_values()) {
    SCOPED_TRACE(v);
    for (unsigned width = 0; width <= kPad; width++) {
      EXPECT_EQ(written([&](char* p) { return put_hex(p, v, width); }),
                printf_string("%*llx", static_cast<int>(width),
                              static_cast<unsigned long long>(v)));
    }
  }
}

TEST(TextBufferTest, StringsOfEveryLengthAcrossTheCopySizes) {
  std::string source;
  for (int i = 0; i < 80; i++) source.push_back(static_cast<char>('a' + i % 26));
  for (size_t n = 0; n <= 64; n++) {
    // Taken from the middle of a longer string, as names in a record are.
    const std::string_view s = std::string_view(source).substr(8, n);
    EXPECT_EQ(written([&](char* p) { return put(p, s); }), std::string(s)) << n;
  }
}

}  // namespace
}  // namespace bpfprof::script
