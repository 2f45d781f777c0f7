// SPDX-License-Identifier: Apache-2.0
#include "record/signals.h"

#include <pthread.h>
#include <sys/signalfd.h>

#include <cerrno>
#include <utility>

namespace bpfprof::record {

Result<SignalGuard> SignalGuard::block_stop_signals(bool switch_signal) {
  SignalGuard g;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  if (switch_signal) sigaddset(&set, SIGUSR2);
  if (int e = ::pthread_sigmask(SIG_BLOCK, &set, &g.old_); e != 0) {
    return make_sys_error("pthread_sigmask", e);
  }
  g.active_ = true;
  g.fd_.reset(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!g.fd_.valid()) return make_sys_error("signalfd", errno);
  return g;
}

SignalGuard::SignalGuard(SignalGuard&& o) noexcept
    : old_(o.old_), fd_(std::move(o.fd_)), active_(std::exchange(o.active_, false)) {}

SignalGuard::~SignalGuard() {
  if (active_) ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

}  // namespace bpfprof::record
