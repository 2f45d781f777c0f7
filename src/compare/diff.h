// SPDX-License-Identifier: Apache-2.0
// `bpfprof diff`: what changed between two recordings, per BPF program (by
// name + tag, since ids differ between runs) and per leaf symbol (symbol +
// dso): samples before and after, and the share of each file's own total, so
// recordings of different lengths compare by percent too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/report_data.h"

namespace bpfprof::compare {

struct DiffEntry {
  std::string name;    // program name, or symbol
  std::string detail;  // program tag, or dso
  uint64_t before = 0, after = 0;  // samples
  double before_percent = 0, after_percent = 0;  // of that recording's samples

  int64_t delta() const { return static_cast<int64_t>(after) - static_cast<int64_t>(before); }
  double delta_percent() const { return after_percent - before_percent; }
};

// The CI gate (`diff --fail-above P`, `--fail-above-ns N`). A program is
// matched across the recordings by name and tag where both have that code,
// else by name alone (its other tags summed on each side: a rebuilt program
// gets a new tag). It offends when its share of samples grows by more than
// P percentage points, or its ns per run by more than N where both
// recordings measured its runs (record --bpf-stats).
struct GateOptions {
  std::optional<double> fail_above;     // percentage points
  std::optional<double> fail_above_ns;  // ns per run
  // A program's samples: its total (self + callees + dispatch, docs/cost.md),
  // or its self samples alone (`--cost self`); for the program rows too.
  bool cost_total = true;
  bool active() const { return fail_above || fail_above_ns; }
};

struct Offender {
  std::string name;
  std::string tag;       // empty when matched by name alone
  bool by_share = true;  // else by ns per run
  double before = 0, after = 0;  // percent of samples, or ns per run
  double growth() const { return after - before; }
};

struct Diff {
  std::string before_path, after_path;  // for the output's header only
  uint64_t before_total = 0, after_total = 0;
  // Sorted by |delta| (samples), largest first; ties by name, then detail.
  std::vector<DiffEntry> programs;
  std::vector<DiffEntry> symbols;
  GateOptions gate;                 // as asked
  std::vector<Offender> offenders;  // largest growth first (ties by name, tag)
};

// A program's samples are its total (or with gate.cost_total false those whose
// leaf is in it), all instances with the same name and tag summed; a symbol's
// are those whose leaf it is.
// With `gate` active, also the offenders.
Diff diff_reports(const analysis::ReportData& before, const analysis::ReportData& after,
                  const GateOptions& gate = {});

std::string render_diff_text(const Diff& diff);
// One offender on one line: "burn (tag 0011223344556677): share 10.00% -> 20.00% (+10.00 points)".
std::string render_offender(const Offender& offender);
// One object: {before: {file, samples}, after: {...}, programs: [...], symbols: [...]};
// entries {name, tag|dso, before, after, delta, before_percent, after_percent,
// delta_percent}, percents with two decimals; with a gate also
// gate: {fail_above, fail_above_ns, offenders: [{name, tag, measure, before, after, growth}]}.
std::string render_diff_json(const Diff& diff);

}  // namespace bpfprof::compare
