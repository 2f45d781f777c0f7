// SPDX-License-Identifier: Apache-2.0
// RecordOptions: what `bpfprof record` was asked to do, independent of how the
// flags were spelled. validate() is the one place that decides which
// combinations make sense, so the CLI and tests agree.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "capture/capture_config.h"
#include "perfdata/enrichment_feature.h"
#include "record/switch_output.h"

namespace bpfprof::record {

inline constexpr uint32_t kDefaultMmapPages = 1024;     // 4 MiB per CPU, as perf
inline constexpr uint32_t kDefaultSidebandPages = 128;  // side-band ring per CPU
inline constexpr uint64_t kDefaultFrequency = 4000;     // perf's default -F
inline constexpr uint32_t kDefaultCaptureRingBytes = capture::kDefaultRingBytes;

// How programs loaded during the recording are enriched (--enrich).
enum class EnrichMode {
  kInKernel,  // captured in the kernel at load; the enricher only as fallback
  kUser,      // the user-space enricher only (woken on every BPF_EVENT)
};

// The recording request. Empty/unset fields take perf's defaults.
struct RecordOptions {
  bool system_wide = false;                 // -a
  std::vector<int> cpus;                    // -C (empty: all online CPUs)
  std::optional<pid_t> pid;                 // -p
  std::vector<std::string> command;         // the workload after `--`
  std::optional<std::string> event;         // -e (unset: cycles, else cpu-clock)
  std::optional<uint64_t> frequency;        // -F
  std::optional<uint64_t> period;           // -c
  bool callchain = false;                   // -g: user stacks too
  bool kernel_callchain = true;             // kernel stacks (a BPF program's cost); --no-callchain
  std::string output = "perf.data";         // -o
  std::optional<double> duration_s;         // -d
  uint32_t mmap_pages = kDefaultMmapPages;  // -m
  uint32_t sideband_pages = kDefaultSidebandPages;
  bool bpf_stats = false;  // --bpf-stats: BPF_STATS_RUN_TIME on while recording
  bool cgroup = false;     // --cgroup: PERF_SAMPLE_CGROUP and CGROUP records
  // -z / --compression-level[=n]: ring data as zstd COMPRESSED records of
  // this level (1..22); unset: uncompressed.
  std::optional<int> compression_level;
  // --switch-output[=signal|SIZE|TIME]: a new file per period, each closed
  // complete and self-contained (switch_output.h); unset: one file.
  std::optional<SwitchOutput> switch_output;
  uint32_t switch_max_files = 0;  // --switch-max-files: keep the newest N (0: all)
  // The enricher's scheduling request and thread layout (see EnricherConfig);
  // changed only to measure what they buy (bench/short_lived.sh).
  perfdata::EnricherSched enricher_sched = perfdata::EnricherSched::kFifo;
  bool enricher_per_cpu = true;
  EnrichMode enrich = EnrichMode::kInKernel;
  // The capture's ring size (a power of two, at least a page); changed only
  // to test a full ring.
  uint32_t capture_ring_bytes = kDefaultCaptureRingBytes;
  // argv for the CMDLINE feature: [our binary, "record", flags...].
  std::vector<std::string> cmdline;

  // Samples are taken on all (listed) CPUs for every task.
  bool samples_system_wide() const { return system_wide || !cpus.empty(); }
};

// Rejects contradictory or impossible requests with kInvalidArgument.
Status validate(const RecordOptions& options);

bool is_power_of_two(uint64_t v);

}  // namespace bpfprof::record
