// SPDX-License-Identifier: Apache-2.0
// Table: fixed-width text columns sized to their widest cell, numbers right
// aligned, text left aligned, the last column unpadded (no trailing blanks).
#pragma once

#include <string>
#include <vector>

namespace bpfprof::report {

class Table {
 public:
  enum class Align { kLeft, kRight };
  struct Column {
    std::string title;
    Align align = Align::kLeft;
  };
  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

  void add_row(std::vector<std::string> cells);
  // Lines that are not cells (callers trees) printed after the current last row.
  void add_note(std::string line);
  // Title line prefixed "# ", rows prefixed "  ".
  std::string render() const;

 private:
  struct Line {
    std::vector<std::string> cells;
    std::string note;  // used when cells is empty
  };
  std::vector<Column> columns_;
  std::vector<Line> lines_;
};

// Formats 100 * part / whole with two decimals and a percent sign.
std::string percent(uint64_t part, uint64_t whole);

}  // namespace bpfprof::report
