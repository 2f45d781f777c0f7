// SPDX-License-Identifier: Apache-2.0
// open_output: the one way bpfprof opens a file it writes (record's output
// and its .old rotation, export -o, merge -o, ...). A symbolic link at the
// path is refused, never followed: a link planted where root writes (a
// world-writable directory) cannot choose the file root creates or changes.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/error.h"
#include "base/unique_fd.h"

namespace bpfprof {

struct OutputOpen {
  mode_t mode = 0600;     // of a file created (and, with set_mode, of one reused)
  bool set_mode = false;  // fchmod an existing regular file to `mode` too
  // perf's convention: an existing regular file of nonzero size is renamed
  // to `path + ".old"` and the output created anew (O_EXCL).
  bool keep_old = false;
};

struct OpenedOutput {
  UniqueFd fd;
  bool regular = true;   // false for a device such as /dev/null (never cut or removed)
  bool rotated = false;  // keep_old renamed a previous file to path.old
};

// Opens `path` for writing: O_NOFOLLOW always (a symbolic link at the path,
// dangling or not, is an Errc::kInvalidArgument error naming it); a regular
// file is truncated, a device written as it is.
Result<OpenedOutput> open_output(const std::string& path, const OutputOpen& how = {});

// Renames an existing regular `path` of nonzero size to `path + ".old"`;
// anything else (absent, empty, a device) stays. Refuses a symbolic link at
// either name. rename(2) never follows a link, so a race can at worst move
// a link, never write through one.
Status rotate_old(const std::string& path, bool* rotated = nullptr);

// Writes all of `bytes` to `path` ("-" or empty: stdout) through
// open_output with mode 0644 (the files other tools read).
Status write_file(const std::string& path, std::string_view bytes);

}  // namespace bpfprof
