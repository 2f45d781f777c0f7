// SPDX-License-Identifier: Apache-2.0
// What one refresh shows, as lines of text with a style each: a status line,
// the BPF program table, then the hottest symbols. Both views draw these
// lines (the curses view with attributes, --stdio as plain text), so what a
// log shows is what the screen showed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "top/model.h"

namespace bpfprof::top {

// What the keys change.
struct ViewState {
  SortKey sort = SortKey::kCpu;
  bool bpf_only = false;  // symbol table: BPF code only
  bool instances = false; // program table: a row per instance, not per code
};

// Facts about the session for the status line.
struct SessionInfo {
  std::string event;        // "cycles" or "cpu-clock"
  uint64_t frequency = 0;
  size_t cpus = 0;
  bool run_stats = false;
  std::string run_stats_note;  // why statistics are off
  double symbolizer_ms = 0;    // rebuild cost of the last refresh
};

struct Line {
  enum class Style { kNormal, kTitle, kHeading, kGone };
  std::string text;
  Style style = Style::kNormal;
};

// Limits of one screen: rows per table (0 = all) and line width (0 = no cut).
struct ScreenSize {
  size_t program_rows = 0;
  size_t symbol_rows = 20;
  size_t width = 0;
};

std::vector<Line> format_screen(const Model& model, const ViewState& view,
                                const SessionInfo& info, const ScreenSize& size);

// One refresh as one line of JSON (no newline): the interval's figures, every
// program (sorted by CPU%; instances of the same code together unless
// `instances`) and the `symbol_rows` hottest leaf symbols.
std::string format_json(const Model& model, const SessionInfo& info, size_t symbol_rows,
                        bool instances);

// The lines shown before the first refresh has data.
std::vector<Line> format_waiting(const SessionInfo& info, double refresh_s);

}  // namespace bpfprof::top
