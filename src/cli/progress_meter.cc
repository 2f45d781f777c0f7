// SPDX-License-Identifier: Apache-2.0
#include "cli/progress_meter.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace bpfprof::cli {

std::string format_walk_progress(const WalkLine& l) {
  std::string s = fmt::format("[ reading {}: ", l.label);
  if (l.pass == 0) return s + fmt::format("{:.1f} s ]", l.elapsed_s);
  if (l.passes > 1) s += fmt::format("pass {}/{}, ", l.pass, std::max(l.pass, l.passes));
  // Whole megabytes once the sizes are large enough for a tenth not to matter.
  const char* mb = l.total_bytes >= (100ull << 20) ? "{:.0f}" : "{:.1f}";
  auto in_mb = [&](uint64_t b) {
    return fmt::format(fmt::runtime(mb), static_cast<double>(b) / (1024.0 * 1024.0));
  };
  const uint64_t bytes = std::min(l.bytes, l.total_bytes);
  const uint64_t percent = l.total_bytes == 0 ? 100 : bytes * 100 / l.total_bytes;
  s += fmt::format("{:.1f} s, {} MB of {} MB ({}%), {} samples", l.elapsed_s, in_mb(bytes),
                   in_mb(l.total_bytes), percent, l.samples);
  if (l.lost > 0) s += fmt::format(", {} lost", l.lost);
  return s + " ]";
}

ProgressMeter::Options ProgressMeter::for_stderr(bool quiet, uint32_t passes) {
  Options o;
  o.show = !quiet && ::isatty(STDERR_FILENO);
  o.passes = passes;
  if (const char* env = std::getenv("BPFPROF_PROGRESS_AFTER_MS")) {
    unsigned ms = 0;
    const char* end = env + std::strlen(env);
    if (auto [p, ec] = std::from_chars(env, end, ms); ec == std::errc() && p == end) {
      o.after = std::chrono::milliseconds(ms);
    }
  }
  return o;
}

ProgressMeter::ProgressMeter(const Options& options, std::string label)
    : options_(options), start_(std::chrono::steady_clock::now()), label_(std::move(label)) {
  if (!options_.show) return;
  if (options_.after.count() == 0) {
    std::lock_guard lock(mu_);
    draw_locked();
  }
  thread_ = std::thread([this] { run(); });
}

ProgressMeter::~ProgressMeter() { stop(); }

void ProgressMeter::next_file(std::string label) {
  std::lock_guard lock(mu_);
  label_ = std::move(label);
  progress_.pass.store(0, std::memory_order_relaxed);
}

void ProgressMeter::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  if (drawn_) {
    std::fputs("\r\x1b[K", options_.out);
    std::fflush(options_.out);
    drawn_ = false;
  }
}

void ProgressMeter::run() {
  std::unique_lock lock(mu_);
  auto next = start_ + (drawn_ ? options_.every : options_.after);
  while (!cv_.wait_until(lock, next, [this] { return stopping_; })) {
    draw_locked();
    next += options_.every;
    // Late (a loaded machine): the next line one period from now, not at once.
    const auto now = std::chrono::steady_clock::now();
    if (next <= now) next = now + options_.every;
  }
}

void ProgressMeter::draw_locked() {
  WalkLine l;
  l.label = label_;
  l.pass = progress_.pass.load(std::memory_order_relaxed);
  l.passes = options_.passes;
  l.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  l.bytes = progress_.bytes.load(std::memory_order_relaxed);
  l.total_bytes = progress_.total_bytes.load(std::memory_order_relaxed);
  l.samples = progress_.samples.load(std::memory_order_relaxed);
  l.lost = progress_.lost.load(std::memory_order_relaxed);
  std::string text = format_walk_progress(l);
  // A line that wraps could not be redrawn in place: cut it to the width.
  winsize ws{};
  if (::ioctl(fileno(options_.out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 &&
      text.size() >= ws.ws_col) {
    text.resize(ws.ws_col - 1u);
  }
  std::fprintf(options_.out, "\r%s\x1b[K", text.c_str());
  std::fflush(options_.out);
  drawn_ = true;
}

}  // namespace bpfprof::cli
