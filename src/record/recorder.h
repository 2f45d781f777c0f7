// SPDX-License-Identifier: Apache-2.0
// The recorder: opens the events, synthesizes the initial state, runs the
// drain loop and the enricher, and writes perf.data. It never prints; notices
// and progress go through a RecordSink the caller provides.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/error.h"
#include "record/drain_loop.h"
#include "record/enricher.h"
#include "record/options.h"

namespace bpfprof::record {

// Where the recorder reports while it runs (both may be empty).
struct RecordSink {
  std::function<void(std::string_view)> notice;   // one line, e.g. the PMU fallback
  std::function<void(const Progress&)> progress;  // about twice a second
  // Once the recording runs (output created, events enabled, command
  // started): notices told before this are the caller's to hold, so a
  // failure to start is one line.
  std::function<void()> started;
};

// What a recording did: the summary line and the enrichment figures.
struct RecordStats {
  std::string event_name;  // the sampling event used
  uint64_t samples = 0;
  uint64_t lost = 0;  // LOST records' counts (sampling + side-band) + LOST_SAMPLES
  uint64_t lost_sideband = 0;
  uint64_t throttles = 0;
  uint64_t records = 0;  // live records written
  std::optional<uint64_t> first_sample_time, last_sample_time;
  size_t bpf_synthesized = 0;  // programs loaded before recording
  size_t bpf_loaded_live = 0;  // PROG_LOADs seen during recording
  size_t bpf_enriched = 0;     // distinct programs with stored info
  size_t bpf_gone = 0;         // unloaded before their info could be read
  size_t metadata_gone = 0;    // .rodata maps gone before their metadata was read
  // bpf_metadata_* variables past the bytes the capture copied of a .rodata
  // value (CAPTURE_VALUE_MAX) whose map was gone before it could be read whole
  size_t metadata_cut = 0;
  size_t trampolines = 0;
  EnrichmentStats enrichment;
  StopReason stop_reason = StopReason::kDuration;
  int stop_signal = 0;
  std::optional<int> workload_status;  // wait status of the command
  double elapsed_s = 0;
  std::string output;       // the file written (with --switch-output, the last one)
  uint64_t file_bytes = 0;  // its size
  size_t files = 1;         // --switch-output: how many were written
  // -z: ring bytes compressed and the COMPRESSED records' bytes (0 without).
  uint64_t compressed_in = 0, compressed_out = 0;
  size_t bpf_programs() const { return bpf_synthesized + bpf_loaded_live; }
};

// Records as `options` say. On an error after the file was created, the file
// is closed valid up to the last complete round; before that, nothing is left
// behind (and a rotated perf.data.old is put back).
Result<RecordStats> record(const RecordOptions& options, const RecordSink& sink);

}  // namespace bpfprof::record
