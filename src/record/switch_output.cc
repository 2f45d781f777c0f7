// SPDX-License-Identifier: Apache-2.0
#include "record/switch_output.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <limits>
#include <thread>

namespace bpfprof::record {
namespace {

// perf's parse_tag_value tables (tools/perf/builtin-record.c): sizes in
// upper case, times in lower case, so "1M" is a MiB and "1m" a minute.
struct Unit {
  char tag;
  uint64_t mult;
  SwitchOutput::Mode mode;
};
constexpr Unit kUnits[] = {
    {'B', 1, SwitchOutput::Mode::kSize},          {'K', 1ull << 10, SwitchOutput::Mode::kSize},
    {'M', 1ull << 20, SwitchOutput::Mode::kSize}, {'G', 1ull << 30, SwitchOutput::Mode::kSize},
    {'s', 1, SwitchOutput::Mode::kTime},          {'m', 60, SwitchOutput::Mode::kTime},
    {'h', 60 * 60, SwitchOutput::Mode::kTime},    {'d', 24 * 60 * 60, SwitchOutput::Mode::kTime},
};

}  // namespace

Result<SwitchOutput> parse_switch_output(std::string_view text) {
  SwitchOutput s;
  if (text == "signal") return s;
  auto bad = [&](std::string_view why) {
    return make_error(Errc::kInvalidArgument,
                      fmt::format("--switch-output={}: {} (signal, a size such as 100M with unit "
                                  "B, K, M or G, or a time such as 10s with unit s, m, h or d)",
                                  text, why));
  };
  if (text.size() < 2) return bad("not a mode");
  uint64_t n = 0;
  const char* end = text.data() + text.size() - 1;
  auto [p, ec] = std::from_chars(text.data(), end, n);
  if (ec != std::errc() || p != end) return bad("not a number followed by one unit");
  for (const Unit& u : kUnits) {
    if (u.tag != text.back()) continue;
    if (n == 0) return bad("must be more than zero");
    if (n > std::numeric_limits<uint64_t>::max() / u.mult) return bad("too large");
    s.mode = u.mode;
    (u.mode == SwitchOutput::Mode::kSize ? s.bytes : s.seconds) = n * u.mult;
    return s;
  }
  return bad(fmt::format("unknown unit '{}'", text.back()));
}

std::string timestamped_name(const std::string& path, const timespec& now) {
  tm local{};
  ::localtime_r(&now.tv_sec, &local);
  char stamp[32];
  ::strftime(stamp, sizeof stamp, "%Y%m%d%H%M%S", &local);
  return fmt::format("{}.{}{:02}", path, stamp, now.tv_nsec / 10'000'000);
}

Result<SwitchedFiles> SwitchedFiles::open(const std::string& path, uint32_t max_files) {
  BPFPROF_ASSIGN_OR_RETURN(OutputDir dir, open_output_dir(path));
  return SwitchedFiles(path, std::move(dir), max_files);
}

Result<std::string> SwitchedFiles::done() {
  // Two switches within a hundredth of a second (a small SIZE), or a file
  // left at that name by another recording: the next hundredth's name.
  for (int attempt = 0; attempt < 1000; attempt++) {
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    const std::string name = timestamped_name(path_, now);
    const std::string leaf = timestamped_name(dir_.leaf, now);
    if (::renameat2(dir_.fd.get(), dir_.leaf.c_str(), dir_.fd.get(), leaf.c_str(),
                    RENAME_NOREPLACE) == 0) {
      renamed_++;
      kept_.push_back(leaf);
      while (max_files_ && kept_.size() > max_files_) {
        // Gone already (the user moved it away) is as good as removed.
        if (::unlinkat(dir_.fd.get(), kept_.front().c_str(), 0) != 0 && errno != ENOENT) {
          return make_sys_error(fmt::format("--switch-max-files: removing {}", kept_.front()),
                                errno);
        }
        kept_.pop_front();
      }
      return name;
    }
    if (errno != EEXIST) {
      return make_sys_error(fmt::format("renaming {} to {}", path_, name), errno);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return make_error(Errc::kIo, fmt::format("renaming {}: every timestamped name is taken", path_));
}

}  // namespace bpfprof::record
