// SPDX-License-Identifier: Apache-2.0
// The rows of one table in a Markdown page, for tests that keep a documented
// table equal to the code's.
#pragma once

#include <string>
#include <vector>

namespace bpfprof::testing {

// The lines of the table whose header line is exactly `header` in the file at
// `path`: every row after the separator that starts with "| `", up to the
// first line that does not. Empty when the file or the header is missing.
std::vector<std::string> markdown_table_rows(const std::string& path, const std::string& header);

}  // namespace bpfprof::testing
