// SPDX-License-Identifier: Apache-2.0
// open_output: the one way bpfprof opens a file it writes (record's output
// and its .old rotation, export -o, merge -o, ...). bpfprof runs as root in
// directories other users can write (/tmp), so an output is always a file it
// creates itself (O_CREAT|O_EXCL), never one it finds at the name:
// - the directories on the way are opened one component at a time, and a
//   symbolic link among them is followed only where no other user could have
//   planted or swapped it (the link owned by root or by us, in a directory
//   owned by root or by us that others cannot write, or that is sticky);
// - a symbolic link at the name itself is refused, dangling or not;
// - a FIFO, socket or block device at the name is refused; a character
//   device under /dev/ (/dev/null, /dev/full) is written as it is, since only
//   root can make one there;
// - whatever regular file stands at the name is moved aside first, never
//   written into: record renames it to name.old (perf's convention; an empty
//   one is removed), the others write a new file beside it and rename it
//   into place.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "base/error.h"
#include "base/unique_fd.h"

namespace bpfprof {

// The directory that holds an output, opened without following any link
// another user controls, and the output's name in it.
struct OutputDir {
  UniqueFd fd;       // O_PATH directory
  std::string leaf;  // the last component of the path
};

// Opens the directory part of `path` as described above. Errors name the
// component that was refused or missing.
Result<OutputDir> open_output_dir(const std::string& path);

struct OutputOpen {
  mode_t mode = 0600;  // of the file created (always a new one)
  // record's convention: whatever regular file stands at the name is renamed
  // to `name.old` (removed instead when it is empty); without it, removed.
  bool keep_old = false;
};

struct OpenedOutput {
  UniqueFd fd;
  OutputDir dir;         // where the file is: abandon() removes it through this
  bool regular = true;   // false for a device such as /dev/null (never cut or removed)
  bool rotated = false;  // keep_old renamed a previous file to name.old
};

// Creates `path` for writing as described above.
Result<OpenedOutput> open_output(const std::string& path, const OutputOpen& how = {});

// Undoes open_output after a failure: removes the file it created and puts
// name.old back where keep_old moved it. A device is left alone.
void abandon_output(OpenedOutput& out);

// Writes all of `bytes` to `path` ("-" or empty: stdout), mode 0600: a new
// file written beside the name and renamed into place, so whatever stood at
// the name is replaced, never written into.
Status write_file(const std::string& path, std::string_view bytes);

}  // namespace bpfprof
