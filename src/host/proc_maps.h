// SPDX-License-Identifier: Apache-2.0
// /proc/PID/maps and /proc/PID/status parsing for synthesizing the state of
// processes that existed before recording began.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bpfprof::host {

// One mapping: "start-end perms offset maj:min inode   path".
struct MapsEntry {
  uint64_t start = 0, end = 0;
  uint64_t pgoff = 0;
  uint32_t prot = 0;   // PROT_READ/WRITE/EXEC
  uint32_t flags = 0;  // MAP_PRIVATE or MAP_SHARED
  uint32_t maj = 0, min = 0;
  uint64_t ino = 0;
  std::string_view path;  // "" for anonymous
  bool exec() const;
};
std::optional<MapsEntry> parse_maps_line(std::string_view line);

// Executable mappings of a maps file, with the names perf uses: anonymous
// executable memory is "//anon"; "[vdso]" and friends keep their names.
struct ExecMapping {
  MapsEntry entry;
  std::string filename;
};
std::vector<ExecMapping> exec_mappings(std::string_view maps_text);

// The fields of /proc/PID/status a FORK/COMM needs.
struct TaskStatus {
  std::string comm;  // "Name:"
  pid_t tgid = 0;    // "Tgid:"
  pid_t ppid = 0;    // "PPid:"
};
std::optional<TaskStatus> parse_status(std::string_view text);

}  // namespace bpfprof::host
