// SPDX-License-Identifier: Apache-2.0
#include "base/error.h"

#include <cerrno>

#include <gtest/gtest.h>

namespace bpfprof {
namespace {

Result<int> half(int x) {
  if (x % 2) return make_error(Errc::kInvalidArgument, "odd");
  return x / 2;
}

Result<int> quarter(int x) {
  BPFPROF_ASSIGN_OR_RETURN(int h, half(x));
  BPFPROF_ASSIGN_OR_RETURN(int q, half(h));
  return q;
}

TEST(ResultTest, PropagatesFirstError) {
  EXPECT_EQ(*quarter(8), 2);
  auto r = quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kInvalidArgument);
}

TEST(ErrorTest, SysErrorMapsPermission) {
  EXPECT_EQ(make_sys_error("open", EPERM).code, Errc::kPermission);
  EXPECT_EQ(make_sys_error("open", ENOENT).code, Errc::kSystem);
  EXPECT_NE(make_sys_error("open", ENOENT).to_string().find("open: "), std::string::npos);
}

TEST(ErrorTest, ContextAndOffsetInLine) {
  Error e = make_error_at(Errc::kBadRecord, 0x40, "size 3").with_context("record");
  EXPECT_EQ(e.to_string(), "record: size 3 (at byte offset 0x40)");
}

}  // namespace
}  // namespace bpfprof
