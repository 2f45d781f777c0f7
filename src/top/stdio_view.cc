// SPDX-License-Identifier: Apache-2.0
#include "top/view.h"

namespace bpfprof::top {

void StdioView::show(const std::vector<Line>& lines) {
  for (const Line& l : lines) {
    std::fwrite(l.text.data(), 1, l.text.size(), out_);
    std::fputc('\n', out_);
  }
  std::fputc('\n', out_);
  // A reader (a log, a test waiting for the next block) sees each block whole.
  std::fflush(out_);
}

}  // namespace bpfprof::top
