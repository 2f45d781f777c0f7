// SPDX-License-Identifier: Apache-2.0
#include "host/kernel_maps.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/text_file.h"
#include "base/text_lines.h"
#include "base/unique_fd.h"

namespace bpfprof::host {
namespace {

// /proc/kallsyms is 5-15 MB on common kernels: reserved, only what is read
// becomes resident.
constexpr size_t kKallsymsSizeHint = 32 << 20;

std::optional<uint64_t> parse_dec(std::string_view s) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// Feeds one kallsyms line into `text`; returns true once nothing more is needed.
bool absorb(const KallsymsLine& l, KernelText& text, bool& have_text, bool& have_stext,
            uint64_t& stext) {
  if (!l.module.empty()) return false;
  if (l.name == "_text") {
    have_text = true;
    text.start = l.addr;
  } else if (l.name == "_stext") {
    have_stext = true;
    stext = l.addr;
  } else if (l.name == "_etext") {
    text.end = l.addr;
    return have_text;
  }
  return false;
}

Result<KernelText> finish(KernelText text, bool have_text, bool have_stext, uint64_t stext) {
  if (have_text) {
    text.ref_name = "_text";
  } else if (have_stext) {
    text.ref_name = "_stext";
    text.start = stext;
  } else {
    return make_error(Errc::kNotFound, "kallsyms: neither _text nor _stext found");
  }
  if (text.end <= text.start) text.end = 0;
  return text;
}

}  // namespace

KallsymsScan scan_kallsyms(std::string&& kallsyms) {
  KallsymsScan scan;
  // A final line without its newline gets one in the snapshot: room for it.
  if (!kallsyms.empty() && kallsyms.back() != '\n') kallsyms.push_back('\n');
  // The snapshot is a subset of the lines in their order, so it is compacted
  // in place: no second buffer of the file's size to fault in and copy into.
  char* const data = kallsyms.data();
  size_t write = 0;
  KernelText text;
  bool have_text = false, have_stext = false, done = false;
  uint64_t stext = 0;
  std::string_view rest = kallsyms;
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    const size_t line_len = nl == std::string_view::npos ? rest.size() : nl;
    std::string_view line = rest.substr(0, line_len);
    const size_t line_at = static_cast<size_t>(line.data() - data);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    auto l = parse_kallsyms_line(line);
    if (!l) continue;
    if (l->module == "bpf") {
      scan.bpf.push_back({l->addr, std::string(l->name)});
      continue;
    }
    if (!done) done = absorb(*l, text, have_text, have_stext, stext);
    if (perfdata::is_text_type(l->type) && l->addr != 0) {
      // Last use of `line`'s views: the move may overwrite them.
      if (write != line_at) std::memmove(data + write, data + line_at, line_len);
      write += line_len;
      data[write++] = '\n';
    }
  }
  kallsyms.resize(write);
  scan.text_symbols = std::move(kallsyms);
  scan.text = finish(std::move(text), have_text, have_stext, stext);
  std::stable_sort(scan.bpf.begin(), scan.bpf.end(),
                   [](const auto& a, const auto& b) { return a.addr < b.addr; });
  return scan;
}

Result<KallsymsScan> read_kallsyms(const std::string& path) {
  BPFPROF_ASSIGN_OR_RETURN(std::string text, read_text_file(path, kKallsymsSizeHint));
  return scan_kallsyms(std::move(text));
}

std::vector<ModuleMap> parse_modules(std::string_view text) {
  std::vector<ModuleMap> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    std::string_view name = next_field(line);
    auto size = parse_dec(next_field(line));
    next_field(line);  // refcount
    next_field(line);  // dependencies
    next_field(line);  // state
    auto addr = parse_hex(next_field(line));
    if (name.empty() || !size || !addr) continue;
    out.push_back({std::string(name), *addr, *size});
  }
  return out;
}

std::vector<ModuleMap> read_modules(const std::string& path) {
  auto text = read_text_file(path);
  if (!text.ok()) return {};
  return parse_modules(*text);
}

}  // namespace bpfprof::host
