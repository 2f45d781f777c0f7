// SPDX-License-Identifier: Apache-2.0
// The main of the kernel and peer test binaries (one ctest entry each):
// exits 77, ctest's SKIP_RETURN_CODE for them (CMakeLists.txt), when tests
// were skipped and none failed. A binary that skips some tests and fails
// another exits 1 and is reported failed, not skipped.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  if (rc == 0 && ::testing::UnitTest::GetInstance()->skipped_test_count() > 0) return 77;
  return rc;
}
