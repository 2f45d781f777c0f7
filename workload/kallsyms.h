// SPDX-License-Identifier: Apache-2.0
// Names of kernel symbols at given addresses, as /proc/kallsyms lists them:
// the kernel's own ksym names for JIT'd BPF functions.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "base/error.h"

namespace bpfprof::workload {

// Reads /proc/kallsyms once and returns the name of each address in `addrs`
// that it lists (addresses it does not list are absent from the map). Fails
// if the file cannot be read or shows only zero addresses (kptr_restrict).
Result<std::map<uint64_t, std::string>> kallsyms_names(std::span<const uint64_t> addrs,
                                                       const char* path = "/proc/kallsyms");

}  // namespace bpfprof::workload
