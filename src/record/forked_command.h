// SPDX-License-Identifier: Apache-2.0
// The command a recording follows: forked at once but held before exec on a
// pipe, so its pid is known when the events are opened (enable_on_exec then
// starts sampling exactly at exec).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"

namespace bpfprof::record {

class Workload {
 public:
  // Forks; the child restores `child_mask` and waits for start(). The child
  // exits 127 without exec if the parent goes away or never starts it.
  static Result<Workload> fork_held(const std::vector<std::string>& argv, const sigset_t& child_mask);

  Workload(Workload&& other) noexcept;
  Workload& operator=(Workload&&) = delete;
  ~Workload();  // kills and reaps a child that is still there

  pid_t pid() const { return pid_; }
  int pidfd() const { return pidfd_.get(); }  // readable once the child exits

  // Lets the child exec; fails (kNotFound etc.) if exec failed.
  Status start();
  // SIGTERM if still running, then waits. Returns the wait status.
  int terminate_and_reap();
  // Waits for the child (which has exited or is about to).
  int reap();

 private:
  Workload() = default;

  std::string argv0_;
  pid_t pid_ = -1;
  UniqueFd go_fd_;     // write end: one byte lets the child exec
  UniqueFd error_fd_;  // read end: the child's errno if exec failed, EOF on success
  UniqueFd pidfd_;
  std::optional<int> status_;
};

}  // namespace bpfprof::record
