// SPDX-License-Identifier: Apache-2.0
#include "analysis/pass1.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "perfdata/file_format.h"

namespace bpfprof::analysis {

Status Session::Piece::walk(uint64_t from, uint64_t to, perfdata::ReaderStats* skipped) {
  dropped = from;
  end = to;
  return session.reader_.for_each_record_in(
      from, to,
      [&](const perf::RecordView& r, uint64_t at) {
        on_record(r, at);
        last_end = at + r.header.size + perfdata::trailing_payload(r.header.type, r.bytes);
      },
      skipped);
}

Status Session::Piece::walk_whole() {
  const perfdata::FileReader& reader = session.reader_;
  dropped = reader.data_offset();
  end = dropped + reader.data_size();
  return reader.for_each_record([&](const perf::RecordView& r, uint64_t at) { on_record(r, at); });
}

void Session::Piece::on_record(const perf::RecordView& view, uint64_t at) {
  if (at - dropped >= kDropWindow) {
    session.reader_.drop_pages(dropped, at);
    report_progress(at);
  }
  records++;
  const uint32_t type = view.header.type;
  if (!known_type(type)) {
    unknown_type++;
    return;
  }
  Segment& seg = segments.back();
  if (type == perf::kRecordFinishedRound) {
    seg.ended = true;
    seg.end_offset = at;
    segments.emplace_back();
    return;
  }
  if (type == perf::kRecordBpfMetadata) {
    bpf_metadata.push_back(keep(view));
    return;
  }
  if (type >= perf::kRecordHeaderAttr) return;  // user records carry no events
  const perfdata::FileAttr* attr = attr_of(view);
  if (attr == nullptr) {
    unknown_attr++;
    return;
  }
  const perf::SampleLayout& layout = attr->layout;
  std::optional<uint64_t> time = layout.time_of(view);
  if (time && *time != 0) {
    if (start_ns == 0 || *time < start_ns) start_ns = *time;
    end_ns = std::max(end_ns, *time);
  }
  if (time) seg.max_time = std::max(seg.max_time, *time);
  if (type == perf::kRecordSample) {
    // Only counted: pass 2 reads the samples again, chunk by chunk.
    if (samples % kChunkSamples == 0) chunk_starts.push_back(at);
    samples++;
    seg.samples++;
    seg.min_sample_time = std::min(seg.min_sample_time, time.value_or(0));
    seg.max_sample_time = std::max(seg.max_sample_time, time.value_or(0));
    return;
  }
  // Copied: records decompressed from COMPRESSED records live in the
  // reader's buffer only during the callback, and pages of plain files are
  // dropped behind the walk.
  const perf::RecordView r = keep(view);
  if (type == perf::kRecordLost) {
    auto l = perf::Lost::parse(r, layout);
    if (l.ok()) lost += l->lost; else bad++;
  } else if (type == perf::kRecordLostSamples) {
    auto l = perf::LostSamples::parse(r, layout);
    if (l.ok()) lost += l->lost; else bad++;
  } else if (type == perf::kRecordThrottle) {
    throttled++;
  }
  if (!time) {
    untimed++;
  } else {
    seg.max_sideband_time = std::max(seg.max_sideband_time, *time);
  }
  sideband.push_back(Sideband{time.value_or(0), r, &layout,
                              static_cast<uint32_t>(segments.size() - 1)});
}

void Session::Piece::report_progress(uint64_t at) {
  if (WalkProgress* progress = session.progress_) {
    progress->add_bytes(at - dropped);
    progress->add_found(samples - reported_samples, lost - reported_lost);
  }
  reported_samples = samples;
  reported_lost = lost;
  dropped = at;
}

perf::RecordView Session::Piece::keep(const perf::RecordView& r) {
  constexpr size_t kChunk = 1 << 20;
  const size_t n = r.bytes.size();
  if (arena.empty() || arena_size - arena_used < n) {
    arena_size = std::max(kChunk, n);
    arena.push_back(std::make_unique_for_overwrite<std::byte[]>(arena_size));
    arena_used = 0;
  }
  std::byte* at = arena.back().get() + arena_used;
  std::memcpy(at, r.bytes.data(), n);
  arena_used += n;
  perf::RecordView copy = r;
  copy.bytes = Bytes(at, n);
  return copy;
}

}  // namespace bpfprof::analysis
