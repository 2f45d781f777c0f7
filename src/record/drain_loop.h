// SPDX-License-Identifier: Apache-2.0
// The drain loop: sleeps in epoll on every ring, a signalfd, a progress timer,
// an optional duration timer and optional pidfds, and on each wake copies all
// rings into the output, and ends the pass through the caller (who closes
// the round with FINISHED_ROUND when something was written: perf record's
// rhythm).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "record/event_set.h"
#include "record/ring_copier.h"

namespace bpfprof::record {

enum class StopReason { kDuration, kSignal, kWorkloadExited, kTargetExited };

// What a progress display shows; sent about twice a second.
struct Progress {
  double elapsed_s = 0;
  uint64_t samples = 0;
  uint64_t lost = 0;
  uint64_t bytes = 0;
};

// How far behind the clock a pass cuts the rings: a record is stamped just
// before the kernel writes it, so one stamped this long ago is there.
inline constexpr uint64_t kCutLagNs = 2'000'000;

struct DrainConfig {
  std::optional<double> duration_s;
  int signal_fd = -1;       // SIGINT/SIGTERM end the recording
  int workload_pidfd = -1;  // the command's exit ends the recording
  int target_pidfd = -1;    // -p: the process's exit ends the recording
  std::chrono::milliseconds progress_interval{500};
  std::function<void(const Progress&)> progress;  // may be empty
  // --switch-output: after a pass, `switch_output` starts the next file when
  // a switch is due: every `switch_interval`, on SIGUSR2 in signal_fd's set
  // (`switch_on_signal`; else SIGUSR2 is ignored there), or when
  // `switch_due` says so (a size reached; checked after a pass, so the
  // switch comes at the next wake). Not when the pass also ends the
  // recording: the last file closes anyway. The pass before a switch cuts
  // every ring at one time (kCutLagNs before it starts): a file holds each
  // sample with every side-band record up to that sample's time, and the
  // next one every record after it. Copied as they come, the sampling
  // rings first, a program unloaded between the two copies would leave its
  // last samples to the next file and its unload to this one.
  // Other passes cut the sampling rings alone (Cut::samples), at the same
  // lag but never before the previous pass ended: the rounds' samples are
  // disjoint in time, so a reader's time window reads its own rounds, not
  // the neighbours' (with each ring copied up to when its turn came, rounds
  // overlapped by a pass's length, and script's windows read 1.5x the
  // file). Side-band records are copied whole as they come: a program's
  // load is enriched at once (a later pass may come only with the progress
  // timer), and perf's round rule holds (no record older than the newest
  // of the round before the last).
  std::optional<std::chrono::nanoseconds> switch_interval;
  bool switch_on_signal = false;
  std::function<bool()> switch_due;
  std::function<Status()> switch_output;
};

// What else a pass does, for enrichment that rides on the drain cadence.
struct PassHooks {
  // Sees the records the pass will copy (those stamped up to the cut, if
  // any), consumes none.
  std::function<void(perf::RingBuffer&, std::optional<uint64_t> until)> before_sideband_copy;
  std::function<Status()> after_pass;
  int wake_fd = -1;  // also ends the wait for a pass (-1: none)
};

class DrainLoop {
 public:
  // `end_pass(copied)` is called after every pass, `copied` telling whether
  // it wrote records; it closes the round (FINISHED_ROUND) when anything
  // was written, what it adds itself included.
  DrainLoop(EventSet& events, const perf::SampleLayout& layout, RecordOutput output,
            std::function<Status(bool copied)> end_pass);

  void set_hooks(PassHooks hooks) { hooks_ = std::move(hooks); }
  // Runs until a stop condition; an output error ends it with that error.
  Result<StopReason> run(const DrainConfig& config);
  // Where a pass stops copying (see DrainConfig): records stamped later than
  // the cut stay in their rings for the next pass. None: copy all.
  struct Cut {
    std::optional<uint64_t> samples, sideband;
  };
  // One pass over every ring (also the final drain after the events are
  // disabled).
  Status pass(Cut cut = {});

  const DrainCounters& counters() const { return copier_.counters(); }
  // The samples of the current output file (since start_file()).
  const FileCounters& file_counters() const { return copier_.file_counters(); }
  void start_file() { copier_.start_file(); }
  int stop_signal() const { return stop_signal_; }

 private:
  EventSet& events_;
  RingCopier copier_;
  RecordOutput output_;
  std::function<Status(bool)> end_pass_;
  PassHooks hooks_;
  int stop_signal_ = 0;
  uint64_t last_pass_end_ = 0;  // monotonic_ns() when the last pass ended
};

}  // namespace bpfprof::record
