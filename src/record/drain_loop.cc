// SPDX-License-Identifier: Apache-2.0
#include "record/drain_loop.h"

#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>

#include "base/clock.h"

namespace bpfprof::record {
namespace {

// epoll user data: small tags for the control fds, ring fds get kRing.
enum Tag : uint64_t {
  kRing = 0,
  kSignal,
  kProgress,
  kDuration,
  kWorkload,
  kTarget,
  kWake,
  kSwitch
};

Result<UniqueFd> make_timer(std::chrono::nanoseconds first, std::chrono::nanoseconds interval) {
  UniqueFd fd(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  if (!fd.valid()) return make_sys_error("timerfd_create", errno);
  itimerspec spec{};
  spec.it_value.tv_sec = first.count() / 1000000000;
  spec.it_value.tv_nsec = first.count() % 1000000000;
  if (spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0) spec.it_value.tv_nsec = 1;
  spec.it_interval.tv_sec = interval.count() / 1000000000;
  spec.it_interval.tv_nsec = interval.count() % 1000000000;
  if (::timerfd_settime(fd.get(), 0, &spec, nullptr) != 0) {
    return make_sys_error("timerfd_settime", errno);
  }
  return fd;
}

Status watch(int epfd, int fd, uint64_t tag) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = tag == kRing ? (static_cast<uint64_t>(fd) << 8) : tag;
  if (::epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0) return make_sys_error("epoll_ctl", errno);
  return ok_status();
}

void drain_fd(int fd) {
  uint64_t buf[16];
  while (::read(fd, buf, sizeof buf) > 0) {
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

DrainLoop::DrainLoop(EventSet& events, const perf::SampleLayout& layout, RecordOutput output,
                     std::function<Status(bool)> end_pass)
    : events_(events),
      copier_(layout),
      output_(std::move(output)),
      end_pass_(std::move(end_pass)) {}

Status DrainLoop::pass(Cut cut) {
  size_t copied = 0;
  for (CpuRing& r : events_.sampling_rings()) {
    auto n = copier_.copy(r.ring, false, output_, cut.samples);
    if (!n.ok()) return std::move(n).error();
    copied += *n;
  }
  for (CpuRing& r : events_.sideband_rings()) {
    if (hooks_.before_sideband_copy) hooks_.before_sideband_copy(r.ring, cut.sideband);
    auto n = copier_.copy(r.ring, true, output_, cut.sideband);
    if (!n.ok()) return std::move(n).error();
    copied += *n;
  }
  // The hook first (it may learn what the round should carry), then the round.
  if (hooks_.after_pass) BPFPROF_TRY(hooks_.after_pass());
  Status ended = end_pass_(copied > 0);
  last_pass_end_ = monotonic_ns();
  return ended;
}

Result<StopReason> DrainLoop::run(const DrainConfig& config) {
  const auto t0 = std::chrono::steady_clock::now();
  UniqueFd ep(::epoll_create1(EPOLL_CLOEXEC));
  if (!ep.valid()) return make_sys_error("epoll_create1", errno);
  for (CpuRing& r : events_.sampling_rings()) BPFPROF_TRY(watch(ep.get(), r.fd.get(), kRing));
  for (CpuRing& r : events_.sideband_rings()) BPFPROF_TRY(watch(ep.get(), r.fd.get(), kRing));
  if (config.signal_fd >= 0) BPFPROF_TRY(watch(ep.get(), config.signal_fd, kSignal));
  if (config.workload_pidfd >= 0) BPFPROF_TRY(watch(ep.get(), config.workload_pidfd, kWorkload));
  if (config.target_pidfd >= 0) BPFPROF_TRY(watch(ep.get(), config.target_pidfd, kTarget));
  if (hooks_.wake_fd >= 0) BPFPROF_TRY(watch(ep.get(), hooks_.wake_fd, kWake));
  // The progress timer also bounds how long side-band records wait in a ring.
  BPFPROF_ASSIGN_OR_RETURN(UniqueFd progress_timer,
                           make_timer(config.progress_interval, config.progress_interval));
  BPFPROF_TRY(watch(ep.get(), progress_timer.get(), kProgress));
  UniqueFd duration_timer;
  if (config.duration_s) {
    auto ns = std::chrono::nanoseconds(static_cast<int64_t>(*config.duration_s * 1e9));
    BPFPROF_ASSIGN_OR_RETURN(duration_timer, make_timer(ns, std::chrono::nanoseconds(0)));
    BPFPROF_TRY(watch(ep.get(), duration_timer.get(), kDuration));
  }
  UniqueFd switch_timer;
  if (config.switch_interval) {
    BPFPROF_ASSIGN_OR_RETURN(switch_timer,
                             make_timer(*config.switch_interval, *config.switch_interval));
    BPFPROF_TRY(watch(ep.get(), switch_timer.get(), kSwitch));
  }

  epoll_event events[64];
  bool switch_now = false;
  for (;;) {
    int n = ::epoll_wait(ep.get(), events, 64, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_sys_error("epoll_wait", errno);
    }
    std::optional<StopReason> stop;
    bool tick = false;
    for (int i = 0; i < n; i++) {
      const uint64_t tag = events[i].data.u64 & 0xff;
      switch (tag) {
        case kRing:
          // A task-bound event whose task exited reports HUP forever; its ring is
          // still drained on every pass, it just no longer wakes us.
          if (events[i].events & (EPOLLHUP | EPOLLERR)) {
            ::epoll_ctl(ep.get(), EPOLL_CTL_DEL, static_cast<int>(events[i].data.u64 >> 8),
                        nullptr);
          }
          break;
        case kSignal: {
          signalfd_siginfo si{};
          while (::read(config.signal_fd, &si, sizeof si) == sizeof si) {
            if (si.ssi_signo == SIGUSR2) {
              switch_now = switch_now || config.switch_on_signal;
            } else {
              stop_signal_ = static_cast<int>(si.ssi_signo);
              stop = StopReason::kSignal;
            }
          }
          break;
        }
        case kProgress:
          drain_fd(progress_timer.get());
          tick = true;
          break;
        case kDuration:
          stop = StopReason::kDuration;
          break;
        case kWorkload:
          if (!stop) stop = StopReason::kWorkloadExited;
          break;
        case kTarget:
          if (!stop) stop = StopReason::kTargetExited;
          break;
        case kSwitch:
          drain_fd(switch_timer.get());
          switch_now = true;
          break;
        default:
          break;
      }
    }
    // The pass that ends the recording copies all; the others cut (see
    // DrainConfig).
    const uint64_t cut = monotonic_ns() - kCutLagNs;
    if (stop) {
      BPFPROF_TRY(pass());
    } else if (switch_now && config.switch_output) {
      BPFPROF_TRY(pass({cut, cut}));
      BPFPROF_TRY(config.switch_output());
      switch_now = false;
    } else {
      BPFPROF_TRY(pass({std::max(cut, last_pass_end_), std::nullopt}));
    }
    if (tick && config.progress) {
      const DrainCounters& c = copier_.counters();
      config.progress(Progress{seconds_since(t0), c.samples, c.lost + c.lost_samples, c.bytes});
    }
    if (stop) return *stop;
    if (config.switch_due && config.switch_due()) switch_now = true;
  }
}

}  // namespace bpfprof::record
