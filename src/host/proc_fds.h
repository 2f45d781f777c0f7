// SPDX-License-Identifier: Apache-2.0
// The open files of every process, as /proc lists them: the one walk of
// /proc/<pid>/fd that owners (who holds a program or link fd) and the
// perf-event attachments (who holds a perf_event fd with a program) share.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace bpfprof::host {

// One fd of one process.
struct ProcFd {
  int pid = 0;
  std::string_view pid_dir;  // the process's directory name under /proc ("1234")
  std::string_view fd;       // the fd's number as /proc names it ("7")
  std::string_view target;   // what its link says ("anon_inode:bpf-prog"); cut at 63 bytes
};

// Calls `fn` for every fd of every process under `proc`, process by process.
// A process that exits meanwhile is skipped; returns how many fd directories
// could not be read for another reason (another user's process without the
// capability).
uint64_t for_each_process_fd(const std::string& proc, const std::function<void(const ProcFd&)>& fn);

// The COMM of process `pid` (its /proc directory name) under `proc` now;
// empty when it is gone.
std::string process_comm(const std::string& proc, std::string_view pid);

}  // namespace bpfprof::host
