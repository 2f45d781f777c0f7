// SPDX-License-Identifier: Apache-2.0
// `bpfprof diff`: what changed between two recordings, per BPF program (by
// name + tag, since ids differ between runs) and per leaf symbol (symbol +
// dso): samples before and after, and the share of each file's own total, so
// recordings of different lengths compare by percent too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/report_data.h"

namespace bpfprof::report {

struct DiffEntry {
  std::string name;    // program name, or symbol
  std::string detail;  // program tag, or dso
  uint64_t before = 0, after = 0;  // samples
  double before_percent = 0, after_percent = 0;  // of that recording's samples

  int64_t delta() const { return static_cast<int64_t>(after) - static_cast<int64_t>(before); }
  double delta_percent() const { return after_percent - before_percent; }
};

struct Diff {
  std::string before_path, after_path;  // for the output's header only
  uint64_t before_total = 0, after_total = 0;
  // Sorted by |delta| (samples), largest first; ties by name, then detail.
  std::vector<DiffEntry> programs;
  std::vector<DiffEntry> symbols;
};

// Leaf frames decide: a program's samples are those whose leaf is in it (all
// instances with the same name and tag summed), a symbol's those whose leaf it is.
Diff diff_reports(const ReportData& before, const ReportData& after);

std::string render_diff_text(const Diff& diff);
// One object: {before: {file, samples}, after: {...}, programs: [...], symbols: [...]};
// entries {name, tag|dso, before, after, delta, before_percent, after_percent,
// delta_percent}, percents with two decimals.
std::string render_diff_json(const Diff& diff);

}  // namespace bpfprof::report
