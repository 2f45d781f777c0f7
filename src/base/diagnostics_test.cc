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
