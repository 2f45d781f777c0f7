// SPDX-License-Identifier: Apache-2.0
// The status line `report`, `script`, `export`, `annotate`, `merge` and `diff`
// draw on stderr while they walk a recording:
//   [ reading perf.data: pass 1/2, 1.2 s, 412 MB of 1370 MB (30%), 859163 samples ]
// A thread polls the Session's WalkProgress and redraws the line in place
// (\r, clear to end of line) every 250 ms, from 0.5 s on: short runs print
// nothing. It is erased when the meter stops, which the command does before
// it writes to stdout or prints an error.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "analysis/walk_progress.h"

namespace bpfprof::cli {

// One drawn state (what format_walk_progress needs).
struct WalkLine {
  std::string label;    // usually the input path
  uint32_t pass = 0;    // 0: not open yet
  uint32_t passes = 1;  // 1: no "pass i/n" part
  double elapsed_s = 0;
  uint64_t bytes = 0, total_bytes = 0, samples = 0, lost = 0;
};

// "[ reading perf.data: pass 1/2, 1.2 s, 412 MB of 1370 MB (30%), 859163 samples ]"
// (", N lost" when there are lost events; only "[ reading X: 0.3 s ]" before
// the file is open). No newline.
std::string format_walk_progress(const WalkLine& line);

class ProgressMeter {
 public:
  struct Options {
    bool show = false;    // false: the meter does nothing, progress() is null
    uint32_t passes = 1;  // walks per file the command makes
    std::FILE* out = stderr;
    std::chrono::milliseconds after{500}, every{250};
  };
  // For a command: shown when stderr is a TTY and not `quiet`. The hidden
  // environment variable BPFPROF_PROGRESS_AFTER_MS overrides the 0.5 s delay
  // (tests use 0: the first line is then drawn before the constructor returns).
  static Options for_stderr(bool quiet, uint32_t passes);

  ProgressMeter(const Options& options, std::string label);
  ~ProgressMeter();  // stop()
  ProgressMeter(const ProgressMeter&) = delete;
  ProgressMeter& operator=(const ProgressMeter&) = delete;

  // What the Session updates (SessionOptions::progress); null when not shown.
  analysis::WalkProgress* progress() { return options_.show ? &progress_ : nullptr; }
  // The command starts another walk of the same file (pass 2, ...).
  void next_pass() { progress_.next_pass(); }
  // The command moves on to another recording (merge, diff).
  void next_file(std::string label);
  // Joins the drawing thread and erases the line if one was drawn. Idempotent.
  void stop();

 private:
  void run();
  void draw_locked();  // mu_ held

  const Options options_;
  analysis::WalkProgress progress_;
  const std::chrono::steady_clock::time_point start_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string label_;      // guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  bool drawn_ = false;     // guarded by mu_
  std::thread thread_;
};

}  // namespace bpfprof::cli
