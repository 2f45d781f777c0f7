// SPDX-License-Identifier: Apache-2.0
// bpfprof: which BPF programs (and kernel/user code) burn CPU.
#include <malloc.h>

#include <string>
#include <vector>

#include "cli/app.h"

int main(int argc, char** argv) {
#ifndef BPFPROF_JEMALLOC
  // Built without jemalloc (BPFPROF_JEMALLOC=OFF; sanitizer builds), glibc's
  // malloc: the enricher thread keeps every program's JIT image and line
  // info until the file is closed: let its heap grow in large steps instead
  // of one mprotect/brk per allocation (measured: ~10% of the enricher's CPU
  // under churn).
  mallopt(M_TOP_PAD, 16 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
  return bpfprof::cli::run_command_line(std::vector<std::string>(argv, argv + argc));
}
