// SPDX-License-Identifier: Apache-2.0
// `bpfprof top`: the loop that drains the live session between refreshes,
// ends an interval every refresh period, updates the model and shows it,
// and leaves on `q`, SIGINT/SIGTERM or after a number of refreshes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string_view>

#include "base/error.h"
#include "top/live_session.h"

namespace bpfprof::top {

struct TopOptions {
  LiveOptions live;
  double refresh_s = 1.0;             // -d
  bool stdio = false;                 // plain periodic text instead of curses
  bool json = false;                  // one JSON object per refresh (a line) on `out`
  bool instances = false;             // a program row per instance (key i toggles it)
  std::optional<uint64_t> refreshes;  // stop after this many (none: until q or a signal)
};

// Runs until the user quits. Errors come back only after the terminal is
// restored, so the caller can print them. `notice` gets one-line remarks
// made before the screen takes over (e.g. the cpu-clock fallback).
Status run_top(const TopOptions& options, std::FILE* out,
               const std::function<void(std::string_view)>& notice);

}  // namespace bpfprof::top
