// SPDX-License-Identifier: Apache-2.0
// SIGINT/SIGTERM (and SIGUSR2 for --switch-output=signal) as a file
// descriptor for the drain loop. Blocking them in the
// recording thread before any other thread or child exists means no thread is
// killed by them; the previous mask is restored on destruction.
#pragma once

#include <signal.h>

#include "base/error.h"
#include "base/unique_fd.h"

namespace bpfprof::record {

class SignalGuard {
 public:
  // `switch_signal`: SIGUSR2 too (--switch-output: it switches the output
  // file, or is ignored).
  static Result<SignalGuard> block_stop_signals(bool switch_signal = false);
  SignalGuard(SignalGuard&& other) noexcept;
  SignalGuard& operator=(SignalGuard&&) = delete;
  ~SignalGuard();

  int fd() const { return fd_.get(); }
  // The mask before blocking: what a forked command should run with.
  const sigset_t& previous_mask() const { return old_; }

 private:
  SignalGuard() = default;
  sigset_t old_{};
  UniqueFd fd_;
  bool active_ = false;
};

}  // namespace bpfprof::record
