// SPDX-License-Identifier: Apache-2.0
// `record --switch-output[=signal|SIZE|TIME]` and `--switch-max-files N`,
// as perf record spells and means them: the recording goes on across files,
// each closed complete and renamed `<output>.<YYYYmmddHHMMSScc>` (local
// time, hundredths of a second, as perf's --timestamp-filename) when the
// next one starts; the last one too, when the recording ends. With N, only
// the newest N of this recording's renamed files are kept.
#pragma once

#include <cstdint>
#include <ctime>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "base/error.h"
#include "base/output_open.h"

namespace bpfprof::record {

struct SwitchOutput {
  enum class Mode { kSignal, kSize, kTime };
  Mode mode = Mode::kSignal;
  uint64_t bytes = 0;    // kSize: data written to the current file
  uint64_t seconds = 0;  // kTime: a file's period
};

// perf's syntax: "signal" (SIGUSR2), or a number with one unit: B, K, M, G
// (sizes, powers of 1024) or s, m, h, d (times). Anything else, or zero,
// is refused with a one-line message.
Result<SwitchOutput> parse_switch_output(std::string_view text);

// `path` + "." + the time as perf names a switched file: YYYYmmddHHMMSS in
// local time, then hundredths of a second (16 digits).
std::string timestamped_name(const std::string& path, const timespec& now);

// The files of one switching recording: the current one is written at
// `path`; done() renames it with its timestamp (never over an existing
// file: a name already taken waits for the next hundredth) and, with
// max_files, removes the oldest renamed ones beyond that many.
class SwitchedFiles {
 public:
  // Opens the directory of `path` as open_output does (no link another user
  // controls is followed).
  static Result<SwitchedFiles> open(const std::string& path, uint32_t max_files);

  // Renames the file at the path; returns the new name (the full path).
  Result<std::string> done();
  size_t renamed() const { return renamed_; }

 private:
  SwitchedFiles(std::string path, OutputDir dir, uint32_t max_files)
      : path_(std::move(path)), dir_(std::move(dir)), max_files_(max_files) {}

  std::string path_;
  OutputDir dir_;
  uint32_t max_files_ = 0;        // 0: keep all
  std::deque<std::string> kept_;  // leaves of the renamed files still there, oldest first
  size_t renamed_ = 0;
};

}  // namespace bpfprof::record
