// SPDX-License-Identifier: Apache-2.0
#include "top/view.h"

#include <cerrno>
#include <cstring>

namespace bpfprof::top {

Status write_out(std::FILE* out, std::string_view text) {
  errno = 0;
  const bool written = std::fwrite(text.data(), 1, text.size(), out) == text.size();
  // A reader (a log, a test waiting for the next block) sees it whole.
  if (written && std::fflush(out) == 0) return ok_status();
  const int err = errno != 0 ? errno : EIO;
  Error e = make_error(Errc::kIo, std::string("writing standard output: ") + std::strerror(err));
  e.sys_errno = err;
  return e;
}

Status StdioView::show(const std::vector<Line>& lines) {
  std::string block;
  for (const Line& l : lines) {
    block += l.text;
    block += '\n';
  }
  block += '\n';
  return write_out(out_, block);
}

}  // namespace bpfprof::top
