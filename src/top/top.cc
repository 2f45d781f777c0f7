// SPDX-License-Identifier: Apache-2.0
#include "top/top.h"

#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "perf/event_open.h"
#include "record/signals.h"
#include "top/model.h"
#include "top/view.h"

namespace bpfprof::top {
namespace {

using Clock = std::chrono::steady_clock;

// Rings are emptied at least this often, whatever the refresh period.
constexpr auto kDrainTick = std::chrono::milliseconds(100);

// Waits until `deadline` for a key or a signal. Returns true on a stop signal.
bool wait(Clock::time_point deadline, int signal_fd, int input_fd) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  pollfd fds[2] = {{signal_fd, POLLIN, 0}, {input_fd, POLLIN, 0}};
  const nfds_t n = input_fd >= 0 ? 2 : 1;
  // EINTR (SIGWINCH from the terminal) just ends the wait early.
  ::poll(fds, n, static_cast<int>(std::max<int64_t>(0, left.count())));
  if (fds[0].revents & POLLIN) {
    signalfd_siginfo si{};
    return ::read(signal_fd, &si, sizeof si) == sizeof si;
  }
  return false;
}

// Notices (the PMU fallback) are held until top has shown something, or the
// screen is about to take the terminal; a failure before that is one line
// with them folded in.
class HeldNotices {
 public:
  explicit HeldNotices(const std::function<void(std::string_view)>& tell) : tell_(tell) {}
  void hold(std::string_view line) { held_.emplace_back(line); }
  void tell() {
    for (const std::string& l : held_) tell_(l);
    held_.clear();
  }
  Error fold(Error e) {
    for (const std::string& l : held_) e.message += " (note: " + l + ")";
    held_.clear();
    return e;
  }

 private:
  const std::function<void(std::string_view)>& tell_;
  std::vector<std::string> held_;
};

Status run(const TopOptions& o, std::FILE* out, HeldNotices& notices) {
  // Before anything else: SIGINT/SIGTERM become readable on a descriptor, so
  // they end the loop like `q` and the terminal is restored on the way out.
  BPFPROF_ASSIGN_OR_RETURN(record::SignalGuard signals, record::SignalGuard::block_stop_signals());
  const bool screen = !o.stdio && !o.json;
  if (screen) BPFPROF_TRY(CursesView::check_terminal());
  BPFPROF_ASSIGN_OR_RETURN(
      std::unique_ptr<LiveSession> session,
      LiveSession::open(o.live, [&](std::string_view l) { notices.hold(l); }));
  // Before the screen takes over, so stderr is still the terminal.
  if (screen) notices.tell();
  SessionInfo info;
  info.event = session->event_name();
  info.frequency = session->frequency();
  if (o.live.cpus.empty()) {
    BPFPROF_ASSIGN_OR_RETURN(auto online, perf::online_cpus());
    info.cpus = online.size();
  } else {
    info.cpus = o.live.cpus.size();
  }
  info.run_stats = session->run_stats();
  info.run_stats_note = session->run_stats_note();

  std::unique_ptr<View> view;
  if (!screen) {
    view = std::make_unique<StdioView>(out);
  } else {
    BPFPROF_ASSIGN_OR_RETURN(view, CursesView::open());
  }
  Model model;
  model.set_baseline(session->baseline());
  ViewState state;
  state.instances = o.instances;
  auto draw = [&]() -> Status {
    if (o.json) {
      if (model.refreshes() == 0) return ok_status();
      // A reader sees each refresh whole, when it happens.
      return write_out(out, format_json(model, info, ScreenSize{}.symbol_rows, o.instances) + "\n");
    }
    if (model.refreshes() == 0) return view->show(format_waiting(info, o.refresh_s));
    return view->show(format_screen(model, state, info, view->size()));
  };
  auto shown = [&]() -> Status {
    BPFPROF_TRY(draw());
    notices.tell();  // something reached the output: top runs
    return ok_status();
  };
  if (screen) BPFPROF_TRY(shown());

  const auto period = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(o.refresh_s));
  auto next = Clock::now() + period;
  for (;;) {
    if (wait(std::min(next, Clock::now() + kDrainTick), signals.fd(), view->input_fd())) break;
    bool quit = false, redraw = false;
    for (Key k : view->keys()) {
      switch (k) {
        case Key::kQuit: quit = true; break;
        case Key::kSort: state.sort = next_sort_key(state.sort); redraw = true; break;
        case Key::kBpfOnly: state.bpf_only = !state.bpf_only; redraw = true; break;
        case Key::kInstances: state.instances = !state.instances; redraw = true; break;
        case Key::kRedraw: redraw = true; break;
      }
    }
    if (quit) break;
    BPFPROF_TRY(session->drain());
    if (Clock::now() >= next) {
      BPFPROF_ASSIGN_OR_RETURN(Interval iv, session->end_interval());
      model.update(iv);
      info.symbolizer_ms = session->cost().symbolizer_ms;
      redraw = true;
      // A slow refresh does not make the next ones come in a burst.
      next = std::max(next + period, Clock::now());
    }
    if (redraw) BPFPROF_TRY(shown());
    if (o.refreshes && model.refreshes() >= *o.refreshes) break;
  }
  notices.tell();
  return ok_status();
}

}  // namespace

Status run_top(const TopOptions& o, std::FILE* out,
               const std::function<void(std::string_view)>& notice) {
  if (!(o.refresh_s > 0)) return make_error(Errc::kInvalidArgument, "-d must be above 0 seconds");
  HeldNotices notices(notice);
  Status s = run(o, out, notices);
  if (!s.ok()) return notices.fold(std::move(s).error());
  return ok_status();
}

}  // namespace bpfprof::top
