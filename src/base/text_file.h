// SPDX-License-Identifier: Apache-2.0
// The one reader of small text files (procfs, sysfs, tracefs): the whole
// file, read until EOF because such files report size 0.
#pragma once

#include <cstddef>
#include <string>

#include "base/error.h"

namespace bpfprof {

// `size_hint`: bytes to reserve first (a /proc file reports no size; growing
// a large one by copies costs page faults on every new buffer).
Result<std::string> read_text_file(const std::string& path, size_t size_hint = 0);

// A sysctl's value for a message (/proc/sys/...): its text without the
// trailing newline, "?" when it cannot be read.
std::string sysctl_value(const std::string& path);

}  // namespace bpfprof
