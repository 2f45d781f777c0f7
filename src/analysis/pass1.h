// SPDX-License-Identifier: Apache-2.0
// Pass 1's inside (analysis only): one piece of the data section walked,
// its side-band records kept, its samples counted, its round segments noted
// for joining (round_join.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "analysis/session.h"
#include "base/error.h"
#include "perf/records.h"
#include "perfdata/reader.h"

namespace bpfprof::analysis {

// Kernel record types up to AUX_OUTPUT_HW_ID, the user types perf 6.1
// writes and perf 6.17's BPF_METADATA; anything else is counted as unknown
// (and otherwise skipped).
inline bool known_type(uint32_t type) {
  return (type >= perf::kRecordMmap && type <= perf::kRecordAuxOutputHwId) ||
         (type >= perf::kRecordHeaderAttr && type < perf::kRecordUserTypeLimit61) ||
         type == perf::kRecordBpfMetadata;
}


// Walks drop the mapped pages behind them every this many bytes (a madvise
// call per window is cheap; opened files are read with pread and their
// mapping is untouched by walks) and report progress at the same points.
constexpr uint64_t kDropWindow = 2 << 20;

// A side-band record kept for the Symbolizer.
struct Session::Sideband {
  uint64_t time;
  perf::RecordView record;
  const perf::SampleLayout* layout;
  uint32_t segment;  // its round segment in its piece (see Piece)
};

// Pass 1 over one piece of the data section: the whole section, or one of two
// halves walked at once. What depends on the records before the piece (the
// FINISHED_ROUND clocks) is kept per round segment, the records between two
// FINISHED_ROUNDs, and worked out when the pieces are joined in file order.
struct Session::Piece {
  struct Segment {
    uint64_t max_time = 0;           // newest time of any timed record
    uint64_t max_sideband_time = 0;  // newest time of a timed side-band record
    uint64_t min_sample_time = UINT64_MAX;  // untimed samples count as 0
    uint64_t max_sample_time = 0;
    uint64_t samples = 0;
    bool ended = false;  // a FINISHED_ROUND ends it (else the piece ends first)
    uint64_t end_offset = 0;  // that FINISHED_ROUND's file offset
  };
  explicit Piece(Session& s) : session(s), attr_of(s.reader_) {}

  // Walks the records that start in file bytes [from, to) (a piece of a
  // plain file; what the reader skips is counted in `skipped`).
  Status walk(uint64_t from, uint64_t to, perfdata::ReaderStats* skipped);
  // Walks the whole data section (any file).
  Status walk_whole();

  void on_record(const perf::RecordView& view, uint64_t at);
  // Copies a side-band record into this piece's arena (see Session::keep).
  perf::RecordView keep(const perf::RecordView& r);

  // Reports the walked bytes up to `at` and the samples and lost events
  // counted since the last report.
  void report_progress(uint64_t at);

  Session& session;
  perfdata::AttrMemo attr_of;
  uint64_t dropped = 0;  // walked bytes up to here were dropped and reported
  uint64_t end = 0;      // where the piece's bytes end
  uint64_t last_end = 0;  // where walk()'s last record ended
  uint64_t records = 0, start_ns = 0, end_ns = 0, lost = 0, throttled = 0;
  uint64_t unknown_type = 0, bad = 0, unknown_attr = 0, untimed = 0;
  uint64_t samples = 0, reported_samples = 0, reported_lost = 0;
  std::vector<uint64_t> chunk_starts;
  std::vector<Segment> segments{1};
  std::vector<Sideband> sideband;
  std::vector<perf::RecordView> bpf_metadata;  // BPF_METADATA records, in the arena
  std::vector<std::unique_ptr<std::byte[]>> arena;
  size_t arena_used = 0, arena_size = 0;
};

}  // namespace bpfprof::analysis
