// SPDX-License-Identifier: Apache-2.0
// The diagnostics table: well formed, and the table in docs/diagnostics.md
// says the same, row for row.
#include "base/diagnostics.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "testing/markdown_table.h"
#include "testing/paths.h"

namespace bpfprof {
namespace {

TEST(DiagnosticsTable, EnumeratorsIndexTheirRowsAndNamesAreUnique) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < kDiagCount; i++) {
    EXPECT_EQ(static_cast<size_t>(kDiagnostics[i].diag), i);
    EXPECT_TRUE(names.insert(kDiagnostics[i].name).second) << kDiagnostics[i].name;
    EXPECT_FALSE(kDiagnostics[i].meaning.empty()) << kDiagnostics[i].name;
  }
}

// Reports print the diagnostics in name order: every one once, sorted.
TEST(DiagnosticsTable, ByNameIsEveryDiagnosticOnceInNameOrder) {
  std::set<Diag> seen(kDiagnosticsByName.begin(), kDiagnosticsByName.end());
  EXPECT_EQ(seen.size(), kDiagCount);
  for (size_t i = 1; i < kDiagCount; i++) {
    EXPECT_LT(diag_info(kDiagnosticsByName[i - 1]).name, diag_info(kDiagnosticsByName[i]).name);
  }
  EXPECT_EQ(diag_info(kDiagnosticsByName.front()).name, "bpf_attach_fd_lost");
  EXPECT_EQ(diag_info(kDiagnosticsByName.back()).name, "unknown_frames.no_vdso");
}

TEST(DiagnosticsTable, ListedAlwaysOrWhenNotZero) {
  EXPECT_TRUE(listed(diag_info(Diag::kSamplesBad), 0));  // always
  EXPECT_TRUE(listed(diag_info(Diag::kSamplesBad), 3));
  EXPECT_FALSE(listed(diag_info(Diag::kCgroupUnknown), 0));  // when not 0
  EXPECT_TRUE(listed(diag_info(Diag::kCgroupUnknown), 1));
}

TEST(DiagnosticsTable, CountsAddPerDiagnostic) {
  DiagCounts a, b;
  a[Diag::kSamplesBad] = 2;
  b[Diag::kSamplesBad] = 3;
  b[Diag::kRecordsBad] = 1;
  a += b;
  EXPECT_EQ(a[Diag::kSamplesBad], 5u);
  EXPECT_EQ(a[Diag::kRecordsBad], 1u);
  EXPECT_EQ(a[Diag::kCgroupUnknown], 0u);
}

TEST(DiagnosticsTable, DocListsEveryCounterAsDeclared) {
  const std::vector<std::string> rows = bpfprof::testing::markdown_table_rows(
      BPFPROF_DIAGNOSTICS_DOC, "| counter | severity | listed | counts |");
  ASSERT_FALSE(rows.empty()) << BPFPROF_DIAGNOSTICS_DOC << ": no table";
  std::vector<std::string> want;
  for (const DiagInfo& d : kDiagnostics) {
    want.push_back(fmt::format("| `{}` | {} | {} | {} |", d.name, severity_name(d.severity),
                               listed_name(d.listed), d.meaning));
  }
  EXPECT_EQ(rows, want);
}

}  // namespace
}  // namespace bpfprof
