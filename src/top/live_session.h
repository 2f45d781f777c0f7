// SPDX-License-Identifier: Apache-2.0
// LiveSession: `record` without a file. It opens the same per-CPU sampling
// and side-band events with the same PMU fallback (record::open_events),
// writes the host's state before it started (host::Snapshot, as record
// does) into memory, and keeps every side-band record it drains, so that at the end of each interval a symbols::Symbolizer built
// from them names the interval's samples exactly as a report of the same
// stream would — including programs that loaded and unloaded in between.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "host/attach_points.h"
#include "host/synthesize.h"
#include "perf/records.h"
#include "perfdata/features.h"
#include "record/event_set.h"
#include "top/model.h"

namespace bpfprof::top {

inline constexpr uint64_t kDefaultFrequency = 999;

struct LiveOptions {
  std::vector<int> cpus;                  // sampling CPUs; empty = every online CPU
  uint64_t frequency = kDefaultFrequency;
  uint32_t sampling_pages = 256;          // per CPU; drained every tick, so far from full
  uint32_t sideband_pages = 128;
  bool run_stats = true;                  // try to turn on BPF run-time statistics
};

// Cost of the last end_interval(), for the status line and for tuning.
struct LiveCost {
  double symbolizer_ms = 0;       // rebuilding the Symbolizer from the side-band records
  double symbolize_ms = 0;        // looking up the interval's samples
  double attach_scan_ms = 0;      // listing attach points (0 when not rescanned)
  size_t sideband_records = 0;    // kept so far (synthesized included)
  size_t sideband_bytes = 0;
};

class LiveSession {
 public:
  using Notice = std::function<void(std::string_view)>;
  // Errors are the recorder's: a missing privilege is one line naming it
  // (Errc::kPermission).
  static Result<std::unique_ptr<LiveSession>> open(const LiveOptions& options,
                                                   const Notice& notice);
  ~LiveSession();
  LiveSession(const LiveSession&) = delete;
  LiveSession& operator=(const LiveSession&) = delete;

  // Moves what the rings hold into memory; cheap, call it often so that a
  // long refresh interval cannot overflow a ring.
  Status drain();
  // Ends the interval now: drains, symbolizes the interval's samples and
  // reads the run counters of the live programs.
  Result<Interval> end_interval();

  // The run counters read when statistics were turned on (Model::set_baseline).
  const std::vector<RunReading>& baseline() const { return baseline_; }
  bool run_stats() const { return stats_fd_.valid(); }
  // Why run statistics are off ("" when on or not asked for).
  const std::string& run_stats_note() const { return run_stats_note_; }
  const std::string& event_name() const { return event_name_; }
  uint64_t frequency() const { return frequency_; }
  const LiveCost& cost() const { return cost_; }

 private:
  LiveSession() = default;
  Status synthesize(const Notice& notice);
  void keep_sideband(const perf::RecordView& r);
  std::vector<RunReading> read_runs(const std::vector<uint32_t>& ids) const;
  // Lists where programs are attached now (as record does at start and end)
  // and keeps the points not seen before in features_.attach.
  void scan_attach(uint64_t now_ns);
  void keep_attach(host::AttachScan scan, uint64_t now_ns);

  record::EventSet events_;
  std::unique_ptr<perf::SampleLayout> layout_;
  perfdata::Features features_;  // kallsyms snapshot and BPF_PROG_INFO of synthesized programs
  std::string event_name_;
  uint64_t frequency_ = 0;
  UniqueFd stats_fd_;
  std::string run_stats_note_;
  std::vector<RunReading> baseline_;
  std::optional<host::Cgroup2Mount> cgroup2_;
  std::set<std::tuple<uint32_t, uint32_t, std::string>> attach_known_;  // prog, link, point
  uint64_t attach_scanned_ns_ = 0;

  // Every side-band record so far, back to back (synthesized first), and the
  // current interval's sample records.
  std::vector<std::byte> sideband_;
  size_t sideband_records_ = 0;
  std::vector<std::byte> samples_;
  uint64_t lost_ = 0;
  uint64_t interval_start_ns_ = 0;
  LiveCost cost_;
};

}  // namespace bpfprof::top
