// SPDX-License-Identifier: Apache-2.0
#include "host/proc_maps.h"

#include <sys/mman.h>

#include <charconv>

namespace bpfprof::host {
namespace {

std::string_view next_field(std::string_view& s) {
  size_t b = s.find_first_not_of(' ');
  if (b == std::string_view::npos) {
    s = {};
    return {};
  }
  s.remove_prefix(b);
  size_t e = s.find(' ');
  std::string_view f = s.substr(0, e);
  s.remove_prefix(e == std::string_view::npos ? s.size() : e);
  return f;
}

template <class T>
bool parse_num(std::string_view s, T& out, int base) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

bool MapsEntry::exec() const { return prot & PROT_EXEC; }

std::optional<MapsEntry> parse_maps_line(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  MapsEntry e;
  std::string_view range = next_field(line);
  size_t dash = range.find('-');
  if (dash == std::string_view::npos || !parse_num(range.substr(0, dash), e.start, 16) ||
      !parse_num(range.substr(dash + 1), e.end, 16) || e.end < e.start) {
    return std::nullopt;
  }
  std::string_view perms = next_field(line);
  if (perms.size() < 4) return std::nullopt;
  if (perms[0] == 'r') e.prot |= PROT_READ;
  if (perms[1] == 'w') e.prot |= PROT_WRITE;
  if (perms[2] == 'x') e.prot |= PROT_EXEC;
  e.flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
  if (!parse_num(next_field(line), e.pgoff, 16)) return std::nullopt;
  std::string_view dev = next_field(line);
  size_t colon = dev.find(':');
  if (colon == std::string_view::npos || !parse_num(dev.substr(0, colon), e.maj, 16) ||
      !parse_num(dev.substr(colon + 1), e.min, 16)) {
    return std::nullopt;
  }
  if (!parse_num(next_field(line), e.ino, 10)) return std::nullopt;
  // The path is the rest of the line after the padding; it may contain spaces.
  size_t b = line.find_first_not_of(' ');
  e.path = b == std::string_view::npos ? std::string_view{} : line.substr(b);
  return e;
}

std::vector<ExecMapping> exec_mappings(std::string_view text) {
  std::vector<ExecMapping> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    auto e = parse_maps_line(line);
    if (!e || !e->exec()) continue;
    std::string name = e->path.empty() ? "//anon" : std::string(e->path);
    out.push_back({*e, std::move(name)});
  }
  return out;
}

std::optional<TaskStatus> parse_status(std::string_view text) {
  TaskStatus s;
  bool have_name = false, have_tgid = false, have_ppid = false;
  while (!text.empty() && !(have_name && have_tgid && have_ppid)) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = line.substr(0, colon);
    std::string_view value = line.substr(colon + 1);
    size_t b = value.find_first_not_of(" \t");
    value = b == std::string_view::npos ? std::string_view{} : value.substr(b);
    if (key == "Name") {
      s.comm = std::string(value);
      have_name = true;
    } else if (key == "Tgid") {
      have_tgid = parse_num(value, s.tgid, 10);
    } else if (key == "PPid") {
      have_ppid = parse_num(value, s.ppid, 10);
    }
  }
  if (!have_name || !have_tgid) return std::nullopt;
  return s;
}

}  // namespace bpfprof::host
