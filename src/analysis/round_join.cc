// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <utility>

#include "analysis/pass1.h"

namespace bpfprof::analysis {

// The pieces joined in file order. perf's ordering contract: after a
// FINISHED_ROUND, no record older than the newest record before the
// *previous* round may follow. A side-band record that breaks it is counted
// (the Symbolizer still applies it at its time); for script, the same contract
// over samples and side-band together (RoundClock) says whether emitting at
// round ends gives the time order.
std::vector<Session::Sideband> Session::join(Pieces& pieces) {
  std::vector<Sideband> sideband;
  RoundClock clock;
  uint64_t sb_newest = 0, sb_newest_at_round = 0, flushed_up_to = 0;
  uint64_t previous_round_samples = 0;
  Piece::Segment open;  // the segment a piece ended in, continued by the next
  for (size_t pi = 0; pi < pieces.size(); pi++) {
    Piece& p = *pieces[pi];
    p.report_progress(p.end);
    header_.records += p.records;
    if (p.start_ns != 0 && (header_.start_ns == 0 || p.start_ns < header_.start_ns)) {
      header_.start_ns = p.start_ns;
    }
    header_.end_ns = std::max(header_.end_ns, p.end_ns);
    header_.lost += p.lost;
    header_.throttled += p.throttled;
    counters_[Diag::kRecordsUnknownType] += p.unknown_type;
    counters_[Diag::kRecordsBad] += p.bad;
    counters_[Diag::kRecordsUnknownAttr] += p.unknown_attr;
    counters_[Diag::kSidebandUntimed] += p.untimed;
    chunk_starts_.insert(chunk_starts_.end(), p.chunk_starts.begin(), p.chunk_starts.end());
    sample_count_ += p.samples;
    for (auto& a : p.arena) arena_.push_back(std::move(a));
    size_t next_sb = 0;
    for (size_t k = 0; k < p.segments.size(); k++) {
      Piece::Segment seg = p.segments[k];
      if (k == 0) {  // continues the segment the previous piece ended in
        seg.max_time = std::max(seg.max_time, open.max_time);
        seg.max_sideband_time = std::max(seg.max_sideband_time, open.max_sideband_time);
        seg.min_sample_time = std::min(seg.min_sample_time, open.min_sample_time);
        seg.max_sample_time = std::max(seg.max_sample_time, open.max_sample_time);
        seg.samples += open.samples;
      }
      for (; next_sb < p.sideband.size() && p.sideband[next_sb].segment == k; next_sb++) {
        const Sideband& sb = p.sideband[next_sb];
        if (sb.time != 0 && sb.time < flushed_up_to) counters_[Diag::kSidebandOutOfOrder]++;
        sideband.push_back(sb);
      }
      if (seg.samples != 0) {
        if (seg.min_sample_time < clock.limit()) sample_order_.by_rounds = false;
        sample_order_.max_pending =
            std::max(sample_order_.max_pending, previous_round_samples + seg.samples);
      }
      clock.saw(seg.max_time);
      sb_newest = std::max(sb_newest, seg.max_sideband_time);
      if (!seg.ended) {
        open = seg;
        break;  // only a piece's last segment is open
      }
      open = Piece::Segment{};
      flushed_up_to = sb_newest_at_round;
      sb_newest_at_round = sb_newest;
      sample_order_.rounds.push_back(RoundMark{seg.end_offset, clock.end_round()});
      sample_order_.segments.push_back({seg.min_sample_time, seg.max_sample_time});
      previous_round_samples = seg.samples;
    }
  }
  // The segment after the last round end (empty when the data ends with one).
  sample_order_.segments.push_back({open.min_sample_time, open.max_sample_time});

  return sideband;
}

}  // namespace bpfprof::analysis
