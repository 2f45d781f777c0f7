// SPDX-License-Identifier: Apache-2.0
#include "testing/markdown_table.h"

#include <fstream>

namespace bpfprof::testing {

std::vector<std::string> markdown_table_rows(const std::string& path, const std::string& header) {
  std::ifstream in(path);
  std::vector<std::string> rows;
  bool table = false;
  for (std::string line; std::getline(in, line);) {
    if (line == header) {
      table = true;
    } else if (table && !line.starts_with("|---")) {
      if (!line.starts_with("| `")) break;
      rows.push_back(line);
    }
  }
  return rows;
}

}  // namespace bpfprof::testing
