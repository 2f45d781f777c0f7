// SPDX-License-Identifier: Apache-2.0
// The diagnostics table: well formed, and the table in docs/diagnostics.md
// says the same, row for row.
#include "base/diagnostics.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

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
  std::ifstream in(BPFPROF_DIAGNOSTICS_DOC);
  ASSERT_TRUE(in) << BPFPROF_DIAGNOSTICS_DOC;
  std::vector<std::string> rows;
  bool table = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "| counter | severity | listed | counts |") {
      table = true;
    } else if (table && !line.starts_with("|---")) {
      if (!line.starts_with("| `")) break;
      rows.push_back(line);
    }
  }
  std::vector<std::string> want;
  for (const DiagInfo& d : kDiagnostics) {
    want.push_back(fmt::format("| `{}` | {} | {} | {} |", d.name, severity_name(d.severity),
                               listed_name(d.listed), d.meaning));
  }
  EXPECT_EQ(rows, want);
}

}  // namespace
}  // namespace bpfprof
