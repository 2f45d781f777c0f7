// SPDX-License-Identifier: Apache-2.0
#include "report/session.h"

#include <algorithm>
#include <cstring>

namespace bpfprof::report {
namespace {

// Kernel record types up to AUX_OUTPUT_HW_ID and the user types perf 6.1
// writes; anything else is counted as unknown (and otherwise skipped).
bool known_type(uint32_t type) {
  return (type >= perf::kRecordMmap && type <= perf::kRecordAuxOutputHwId) ||
         (type >= perf::kRecordHeaderAttr && type < perf::kRecordUserTypeLimit61);
}

// Walks drop the mapped pages behind them every this many bytes (a madvise
// call per window is cheap; opened files are read with pread and their
// mapping is untouched by walks) and report progress at the same points.
constexpr uint64_t kDropWindow = 2 << 20;

// A side-band record waiting for the time sort.
struct Sideband {
  uint64_t time;
  perf::RecordView record;
  const perf::SampleLayout* layout;
};

}  // namespace

Result<std::unique_ptr<Session>> Session::open(const std::string& path,
                                               const SessionOptions& options) {
  auto reader = perfdata::FileReader::open(path);
  if (!reader.ok()) return std::move(reader).error();
  std::unique_ptr<Session> s(new Session(std::move(reader).value()));
  BPFPROF_TRY(s->pass1(options));
  return s;
}

Result<std::unique_ptr<Session>> Session::from_bytes(Bytes data, const SessionOptions& options) {
  auto reader = perfdata::FileReader::from_bytes(data);
  if (!reader.ok()) return std::move(reader).error();
  std::unique_ptr<Session> s(new Session(std::move(reader).value()));
  BPFPROF_TRY(s->pass1(options));
  return s;
}

perf::RecordView Session::keep(const perf::RecordView& r) {
  constexpr size_t kChunk = 1 << 20;
  const size_t n = r.bytes.size();
  if (arena_.empty() || arena_size_ - arena_used_ < n) {
    arena_size_ = std::max(kChunk, n);
    arena_.push_back(std::make_unique<std::byte[]>(arena_size_));
    arena_used_ = 0;
  }
  std::byte* at = arena_.back().get() + arena_used_;
  std::memcpy(at, r.bytes.data(), n);
  arena_used_ += n;
  perf::RecordView copy = r;
  copy.bytes = Bytes(at, n);
  return copy;
}

Status Session::pass1(const SessionOptions& options) {
  const perfdata::Features& f = reader_.features();
  header_.host = f.hostname.value_or("");
  header_.kernel = f.osrelease.value_or("");
  header_.arch = f.arch.value_or("");
  for (size_t i = 0; i < reader_.attrs().size(); i++) {
    const std::string& name = reader_.attrs()[i].name;
    header_.events.push_back(name.empty() ? "event" + std::to_string(i) : name);
  }
  for (const char* name : {"records_unknown_type", "records_bad", "records_unknown_attr",
                           "sideband_untimed", "sideband_out_of_order",
                           "feature_sections_unreadable"}) {
    counters_[name] = 0;
  }
  counters_["feature_sections_unreadable"] = reader_.feature_errors().size();

  std::vector<Sideband> sideband;
  // perf's ordering contract: after a FINISHED_ROUND, no record older than
  // the newest record before the *previous* round may follow. A record that
  // breaks it is counted; it is still applied in time order below.
  uint64_t newest = 0, newest_at_round = 0, flushed_up_to = 0;
  // The same contract over samples and side-band together, for script.
  RoundClock clock;
  uint64_t round_samples = 0, previous_round_samples = 0;
  const uint64_t data_begin = reader_.data_offset();
  uint64_t dropped = data_begin;
  progress_ = options.progress;
  if (progress_) progress_->begin_file(reader_.data_size());
  Status walked = reader_.for_each_record([&](const perf::RecordView& view, uint64_t at) {
    if (at - dropped >= kDropWindow) {
      reader_.drop_pages(dropped, at);
      if (progress_) {
        progress_->add_bytes(at - dropped);
        progress_->found(sample_count_, header_.lost);
      }
      dropped = at;
    }
    header_.records++;
    const uint32_t type = view.header.type;
    if (!known_type(type)) {
      counters_["records_unknown_type"]++;
      return;
    }
    if (type == perf::kRecordFinishedRound) {
      flushed_up_to = newest_at_round;
      newest_at_round = newest;
      sample_order_.rounds.push_back(RoundMark{at, clock.end_round()});
      previous_round_samples = round_samples;
      round_samples = 0;
      return;
    }
    if (type >= perf::kRecordHeaderAttr) return;  // user records carry no events
    const perfdata::FileAttr* attr = reader_.attr_for(view);
    if (attr == nullptr) {
      counters_["records_unknown_attr"]++;
      return;
    }
    const perf::SampleLayout& layout = attr->layout;
    std::optional<uint64_t> time = layout.time_of(view);
    if (time && *time != 0) {
      if (header_.start_ns == 0 || *time < header_.start_ns) header_.start_ns = *time;
      header_.end_ns = std::max(header_.end_ns, *time);
    }
    if (time) clock.saw(*time);
    if (type == perf::kRecordSample) {
      // Only counted: pass 2 reads the samples again, chunk by chunk.
      if (sample_count_ % kChunkSamples == 0) chunk_starts_.push_back(at);
      sample_count_++;
      if (time.value_or(0) < clock.limit()) sample_order_.by_rounds = false;
      round_samples++;
      sample_order_.max_pending =
          std::max(sample_order_.max_pending, previous_round_samples + round_samples);
      return;
    }
    // Copied: records decompressed from COMPRESSED records live in the
    // reader's buffer only during the callback, and pages of plain files are
    // dropped behind the walk.
    const perf::RecordView r = keep(view);
    if (type == perf::kRecordLost) {
      auto lost = perf::Lost::parse(r, layout);
      if (lost.ok()) header_.lost += lost->lost; else counters_["records_bad"]++;
    } else if (type == perf::kRecordLostSamples) {
      auto lost = perf::LostSamples::parse(r, layout);
      if (lost.ok()) header_.lost += lost->lost; else counters_["records_bad"]++;
    } else if (type == perf::kRecordThrottle) {
      header_.throttled++;
    }
    if (!time) {
      counters_["sideband_untimed"]++;
    } else {
      if (*time != 0 && *time < flushed_up_to) counters_["sideband_out_of_order"]++;
      newest = std::max(newest, *time);
    }
    sideband.push_back(Sideband{time.value_or(0), r, &layout});
  });
  reader_.drop_pages(data_begin, data_begin + reader_.data_size());
  if (progress_) {
    progress_->add_bytes(data_begin + reader_.data_size() - dropped);
    progress_->found(sample_count_, header_.lost);
  }
  compressed_ = reader_.stats().compressed_records > 0;
  if (!walked.ok()) return walked;
  // The reader skips record types it does not know and counts them.
  for (const auto& [type, n] : reader_.stats().unknown_record_types) {
    counters_["records_unknown_type"] += n;
  }
  counters_["feature_sections_unknown"] = reader_.stats().unknown_features;

  // Untimed and synthesized records (time 0) first, then time order; records
  // with equal times keep their file order.
  std::stable_sort(sideband.begin(), sideband.end(),
                   [](const Sideband& a, const Sideband& b) { return a.time < b.time; });
  symbolizer_ = std::make_unique<symbols::Symbolizer>(
      f, symbols::Symbolizer::Options{options.symfs, options.read_elf});
  for (const Sideband& s : sideband) symbolizer_->add_sideband(s.record, *s.layout);
  symbolizer_->finish();
  return ok_status();
}

size_t Session::chunk_count() const {
  if (sample_count_ == 0) return 0;
  return compressed_ ? 1 : chunk_starts_.size();
}

Status Session::for_each_sample(size_t first, size_t last, const SampleFn& fn) const {
  if (first >= last || first >= chunk_count()) return ok_status();
  auto on_record = [&](const perf::RecordView& r, uint64_t) {
    if (r.header.type != perf::kRecordSample) return;
    // Pass 1 counted samples without a known attr; they are not walked.
    if (const perfdata::FileAttr* attr = reader_.attr_for(r)) fn(r, attr->layout);
  };
  if (compressed_) return for_each_record(on_record);
  const uint64_t begin = chunk_starts_[first];
  const uint64_t end = last < chunk_starts_.size()
                           ? chunk_starts_[last]
                           : reader_.data_offset() + reader_.data_size();
  uint64_t dropped = begin;
  // The bytes before the first sample are not walked again: done.
  if (progress_ && first == 0) progress_->add_bytes(begin - reader_.data_offset());
  Status walked = reader_.for_each_record_in(begin, end, [&](const perf::RecordView& r,
                                                             uint64_t at) {
    if (at - dropped >= kDropWindow) {
      reader_.drop_pages(dropped, at);
      if (progress_) progress_->add_bytes(at - dropped);
      dropped = at;
    }
    on_record(r, at);
  });
  reader_.drop_pages(dropped, end);
  if (progress_) progress_->add_bytes(end - dropped);
  return walked;
}

Status Session::for_each_record(const RecordFn& fn) const {
  const uint64_t begin = reader_.data_offset();
  uint64_t dropped = begin;
  Status walked = reader_.for_each_record([&](const perf::RecordView& r, uint64_t at) {
    if (at - dropped >= kDropWindow) {
      reader_.drop_pages(dropped, at);
      if (progress_) progress_->add_bytes(at - dropped);
      dropped = at;
    }
    fn(r, at);
  });
  drop_pages();
  if (progress_) progress_->add_bytes(begin + reader_.data_size() - dropped);
  return walked;
}

Result<perf::RecordView> Session::record_at(uint64_t file_offset) const {
  const uint64_t begin = reader_.data_offset();
  if (compressed_ || file_offset < begin) {
    return make_error_at(Errc::kInternal, file_offset, "no plain record at this offset");
  }
  return perf::record_at(reader_.data_section(), static_cast<size_t>(file_offset - begin), begin);
}

void Session::drop_pages() const {
  reader_.drop_pages(reader_.data_offset(), reader_.data_offset() + reader_.data_size());
}

}  // namespace bpfprof::report
