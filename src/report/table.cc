// SPDX-License-Identifier: Apache-2.0
#include "report/table.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

#include <fmt/format.h>

#include "base/percent.h"

namespace bpfprof::report {

void Table::add_row(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  lines_.push_back(Line{std::move(cells), {}});
}

void Table::add_note(std::string line) { lines_.push_back(Line{{}, std::move(line)}); }

std::string Table::render() const {
  std::vector<size_t> width(columns_.size());
  for (size_t c = 0; c < columns_.size(); c++) width[c] = columns_[c].title.size();
  for (const Line& l : lines_) {
    for (size_t c = 0; c < l.cells.size(); c++) width[c] = std::max(width[c], l.cells[c].size());
  }
  auto format_line = [&](const std::vector<std::string>& cells, const char* prefix,
                         std::string& out) {
    const size_t start = out.size();
    out += prefix;
    for (size_t c = 0; c < cells.size(); c++) {
      const bool last = c + 1 == cells.size();
      if (c > 0) out += "  ";
      // fmt pads by display width, as before: keep it for the padding.
      if (columns_[c].align == Align::kRight) {
        fmt::format_to(std::back_inserter(out), "{:>{}}", cells[c], width[c]);
      } else if (last) {
        out += cells[c];
      } else {
        fmt::format_to(std::back_inserter(out), "{:<{}}", cells[c], width[c]);
      }
    }
    while (out.size() > start && out.back() == ' ') out.pop_back();
    out += '\n';
  };
  // The callers trees of `report -g` make this the largest string of a
  // report: sized once, so it never holds a doubling's slack.
  size_t size = 0;
  for (const Line& l : lines_) {
    if (l.cells.empty()) {
      size += l.note.size() + 1;
      continue;
    }
    size += 2 + l.cells.size() * 2 + 1;
    for (size_t c = 0; c < l.cells.size(); c++) size += std::max(width[c], l.cells[c].size());
  }
  std::vector<std::string> titles;
  for (const Column& c : columns_) titles.push_back(c.title);
  std::string out;
  out.reserve(size + 256 + columns_.size() * 64);
  format_line(titles, "# ", out);
  for (const Line& l : lines_) {
    if (l.cells.empty()) {
      out += l.note;
      out += '\n';
    } else {
      format_line(l.cells, "  ", out);
    }
  }
  return out;
}

std::string percent(uint64_t part, uint64_t whole) {
  return fmt::format("{:.2f}%", percent_of(part, whole));
}

}  // namespace bpfprof::report
