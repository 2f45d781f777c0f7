// SPDX-License-Identifier: Apache-2.0
// Kernel build ids: the one a file records (BUILD_ID feature, written by
// perf record) and the running kernel's, so a report can say whether the
// reporting host runs the kernel a recording was made on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/byte_cursor.h"

namespace bpfprof::perfdata {

// The host kernel's entry ("[kernel.kallsyms]", pid -1) of a BUILD_ID
// feature section (perf-data-format.md 8.2); empty if there is none.
std::vector<uint8_t> recorded_kernel_build_id(Bytes build_id_section);
// NT_GNU_BUILD_ID from ELF notes as /sys/kernel/notes lists them; empty if
// there is none.
std::vector<uint8_t> note_build_id(Bytes notes);
// The running kernel's build id; empty if `notes_path` cannot be read.
std::vector<uint8_t> running_kernel_build_id(const std::string& notes_path = "/sys/kernel/notes");

}  // namespace bpfprof::perfdata
