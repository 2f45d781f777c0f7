// SPDX-License-Identifier: Apache-2.0
// Where a refresh goes: a curses screen (keys sort and filter, the terminal
// is restored on every way out) or plain periodic text (--stdio) for logs
// and tests.
#pragma once

#include <cstdio>
#include <memory>
#include <vector>

#include "base/error.h"
#include "top/screen.h"

namespace bpfprof::top {

enum class Key { kQuit, kSort, kBpfOnly, kInstances, kRedraw };

class View {
 public:
  virtual ~View() = default;
  // Draws one refresh; an error when it could not be written.
  virtual Status show(const std::vector<Line>& lines) = 0;
  // How much fits.
  virtual ScreenSize size() const = 0;
  // A descriptor that becomes readable on input (-1: none) and the keys read.
  virtual int input_fd() const { return -1; }
  virtual std::vector<Key> keys() { return {}; }
};

// Writes `text` to `out` and flushes it: an error (kIo, "writing standard
// output: ...") when the stream took less, as every other command reports
// an output it could not write.
Status write_out(std::FILE* out, std::string_view text);

// One block per refresh, separated by an empty line, flushed at once.
class StdioView final : public View {
 public:
  explicit StdioView(std::FILE* out) : out_(out) {}
  Status show(const std::vector<Line>& lines) override;
  ScreenSize size() const override { return ScreenSize{0, 20, 0}; }

 private:
  std::FILE* out_;
};

// The full-screen view on the controlling terminal (stdin/stdout). Owning it
// is owning the terminal: the destructor restores it.
class CursesView final : public View {
 public:
  // kInvalidArgument when stdin/stdout are not a terminal curses can drive.
  static Status check_terminal();
  static Result<std::unique_ptr<CursesView>> open();
  ~CursesView() override;
  CursesView(const CursesView&) = delete;
  CursesView& operator=(const CursesView&) = delete;

  Status show(const std::vector<Line>& lines) override;
  ScreenSize size() const override;
  int input_fd() const override;
  std::vector<Key> keys() override;

 private:
  CursesView() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bpfprof::top
