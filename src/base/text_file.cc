// SPDX-License-Identifier: Apache-2.0
#include "base/text_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "base/unique_fd.h"

namespace bpfprof {

Result<std::string> read_text_file(const std::string& path, size_t size_hint) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return make_sys_error("open " + path, errno);
  std::string out;
  out.reserve(size_hint);
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_sys_error("read " + path, errno);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

std::string sysctl_value(const std::string& path) {
  auto text = read_text_file(path);
  if (!text.ok()) return "?";
  std::string v = *text;
  while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
  return v;
}

}  // namespace bpfprof
