// SPDX-License-Identifier: Apache-2.0
#include "base/byte_cursor.h"

#include <vector>

#include <gtest/gtest.h>

namespace bpfprof {
namespace {

TEST(ByteCursorTest, ReadsUnalignedAndStopsAtEnd) {
  std::vector<std::byte> buf;
  buf.push_back(std::byte{0xAA});
  append_pod(buf, uint32_t{0x11223344});
  append_pod(buf, uint16_t{7});
  ByteCursor c(buf, 100);
  EXPECT_EQ(*c.u8("tag"), 0xAA);
  EXPECT_EQ(*c.u32("value"), 0x11223344u);
  auto r = c.u32("next");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kTruncated);
  EXPECT_EQ(*r.error().offset, 105u);
  EXPECT_NE(r.error().message.find("next"), std::string::npos);
  EXPECT_EQ(*c.u16("short"), 7);
  EXPECT_EQ(c.remaining(), 0u);
}

TEST(ByteCursorTest, ArrayCountOverflowIsAnError) {
  std::vector<std::byte> buf(16);
  ByteCursor c(buf);
  EXPECT_FALSE(c.array<uint64_t>(UINT64_MAX / 4, "ips").ok());
  EXPECT_TRUE(c.array<uint64_t>(2, "ips").ok());
}

TEST(ByteCursorTest, FixedStringStopsAtNul) {
  const char text[8] = {'a', 'b', 0, 'z', 0, 0, 0, 0};
  ByteCursor c(as_bytes_of(text, sizeof text));
  EXPECT_EQ(*c.fixed_string(8, "name"), "ab");
  EXPECT_EQ(c.remaining(), 0u);
}

}  // namespace
}  // namespace bpfprof
