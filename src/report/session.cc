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
  Status walked = reader_.for_each_record([&](const perf::RecordView& view, uint64_t) {
    header_.records++;
    const uint32_t type = view.header.type;
    if (!known_type(type)) {
      counters_["records_unknown_type"]++;
      return;
    }
    if (type == perf::kRecordFinishedRound) {
      flushed_up_to = newest_at_round;
      newest_at_round = newest;
      return;
    }
    if (type >= perf::kRecordHeaderAttr) return;  // user records carry no events
    // Once a COMPRESSED record was seen, records may come from the reader's
    // decompression buffer: keep copies (plain files stay zero-copy).
    const perf::RecordView r = reader_.stats().compressed_records > 0 ? keep(view) : view;
    const perfdata::FileAttr* attr = reader_.attr_for(r);
    if (attr == nullptr) {
      counters_["records_unknown_attr"]++;
      return;
    }
    const perf::SampleLayout& layout = attr->layout;
    std::optional<uint64_t> time = layout.time_of(r);
    if (time && *time != 0) {
      if (header_.start_ns == 0 || *time < header_.start_ns) header_.start_ns = *time;
      header_.end_ns = std::max(header_.end_ns, *time);
    }
    if (type == perf::kRecordSample) {
      samples_.push_back(SampleRef{r, &layout, time.value_or(0)});
      return;
    }
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

}  // namespace bpfprof::report
