// SPDX-License-Identifier: Apache-2.0
// The vDSO this host maps into every (64-bit) process: a small ELF image the
// kernel builds in, different for each kernel build. `record` stores it in
// the file (section 255) so that a report names `[vdso]` frames
// (`__vdso_clock_gettime`) from the recording, never from the reporting host.
#pragma once

#include <cstddef>
#include <vector>

#include "base/error.h"

namespace bpfprof::host {

// The `[vdso]` mapping of this process (as /proc/self/maps places it),
// copied. Errors: no such mapping, or one that is not an ELF image.
Result<std::vector<std::byte>> read_vdso_image();

}  // namespace bpfprof::host
