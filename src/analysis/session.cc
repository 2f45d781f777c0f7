// SPDX-License-Identifier: Apache-2.0
#include "analysis/session.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>
#include <thread>

#include "perfdata/build_ids.h"
#include "perfdata/file_format.h"

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

// A side-band record kept for the Symbolizer.
struct Sideband {
  uint64_t time;
  perf::RecordView record;
  const perf::SampleLayout* layout;
  uint32_t segment;  // its round segment in its piece (see Piece)
};

// A guessed record boundary is believed after this many plausible headers in
// a row (or the data end); the walk before it must also land on it exactly.
constexpr int kBoundaryChain = 32;
// How far past the middle a boundary is looked for.
constexpr uint64_t kBoundarySearch = 1 << 20;

// --kallsyms FILE, read whole (/proc/kallsyms has no size to stat).
Result<perfdata::KallsymsTable> read_user_kallsyms(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_sys_error("--kallsyms " + path, errno);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return make_sys_error("--kallsyms " + path, errno);
  perfdata::KallsymsTable table = perfdata::KallsymsTable::from_text(text.str());
  if (table.empty()) {
    return make_error(Errc::kInvalidArgument,
                      "--kallsyms " + path +
                          ": no kernel text symbols with addresses (a user who may not see "
                          "kernel addresses reads zeros)");
  }
  return table;
}

// The header's "kernel symbols" note: empty when the file's snapshot names
// kernel code. Without one, says whether this host runs the recorded kernel
// (BUILD_ID feature against /sys/kernel/notes: the only host file read
// without the flag, and only for this hint).
std::string kernel_symbols_note(const perfdata::Features& f, const std::string& kallsyms_flag) {
  const bool snapshot = f.kallsyms.has_value() || !f.kallsyms_packed.empty();
  if (!kallsyms_flag.empty()) {
    return "from --kallsyms " + kallsyms_flag +
           (snapshot ? " (instead of the file's snapshot)" : "");
  }
  if (snapshot) return "";
  std::string note = "none (the file has no kallsyms snapshot): kernel frames are [unknown]";
  std::vector<uint8_t> recorded;
  if (auto it = f.other.find(perfdata::kFeatBuildId); it != f.other.end()) {
    recorded = perfdata::recorded_kernel_build_id(it->second);
  }
  if (!recorded.empty() && recorded == perfdata::running_kernel_build_id()) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    for (uint8_t b : recorded) hex += {kHex[b >> 4], kHex[b & 15]};
    return note + "; this host runs the recorded kernel (build id " + hex +
           "): --kallsyms /proc/kallsyms would name them";
  }
  return note + "; --kallsyms FILE names them from the recorded kernel's kallsyms";
}

}  // namespace

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
  uint64_t records = 0, start_ns = 0, end_ns = 0, lost = 0, throttled = 0;
  uint64_t unknown_type = 0, bad = 0, unknown_attr = 0, untimed = 0;
  uint64_t samples = 0, reported_samples = 0, reported_lost = 0;
  std::vector<uint64_t> chunk_starts;
  std::vector<Segment> segments{1};
  std::vector<Sideband> sideband;
  std::vector<std::unique_ptr<std::byte[]>> arena;
  size_t arena_used = 0, arena_size = 0;
};

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

namespace {

// Whether `data` holds, from `pos`, kBoundaryChain plausible record headers
// in a row (or plausible ones up to its end exactly).
bool plausible_records_at(Bytes data, size_t pos) {
  for (int i = 0; i < kBoundaryChain; i++) {
    if (pos == data.size()) return true;
    if (data.size() - pos < sizeof(perf::RecordHeader)) return false;
    const auto h = load_unaligned<perf::RecordHeader>(data.data() + pos);
    if (h.size < sizeof(perf::RecordHeader) || h.size % 8 != 0 || h.size > data.size() - pos ||
        !known_type(h.type) || h.type == perf::kRecordCompressed ||
        perfdata::trailing_payload(h.type, data.subspan(pos, h.size)) != 0) {
      return false;
    }
    pos += h.size;
  }
  return true;
}

// A likely record boundary at or after the middle of the data section
// (8-byte aligned, as perf and bpfprof write records); 0 if none is found.
uint64_t guess_boundary(Bytes data) {
  const size_t from = data.size() / 2 / 8 * 8;
  const size_t to = std::min(data.size(), from + kBoundarySearch);
  for (size_t pos = from; pos + sizeof(perf::RecordHeader) <= to; pos += 8) {
    if (plausible_records_at(data, pos)) return pos;
  }
  return 0;
}

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

// Two halves at once when the file is large and plain: the second half starts
// at a guessed record boundary, which only counts if the first half's walk
// ends exactly there. Anything else (no boundary found, a walk that does not
// land on it, any error, a COMPRESSED record) leaves the pieces unused: the
// caller walks the whole section in one piece, which also names any error.
std::optional<std::vector<std::unique_ptr<Session::Piece>>> Session::walk_in_parallel(
    uint64_t min_bytes) {
  const uint64_t size = reader_.data_size();
  const perfdata::Features& f = reader_.features();
  if (size / 2 < min_bytes || f.compression || reader_.truncated_header()) {
    return std::nullopt;
  }
  const uint64_t cut = guess_boundary(reader_.data_section());
  if (cut == 0) return std::nullopt;
  const uint64_t begin = reader_.data_offset(), seam = begin + cut, end = begin + size;
  std::vector<std::unique_ptr<Piece>> pieces;
  pieces.push_back(std::make_unique<Piece>(*this));
  pieces.push_back(std::make_unique<Piece>(*this));
  perfdata::ReaderStats skipped[2];
  Status walked[2] = {ok_status(), ok_status()};
  uint64_t first_end = 0;  // where the first half's last record ends
  auto walk = [&](int i, uint64_t from, uint64_t to) {
    Piece& p = *pieces[static_cast<size_t>(i)];
    p.dropped = from;
    p.end = to;
    walked[i] = reader_.for_each_record_in(
        from, to,
        [&](const perf::RecordView& r, uint64_t at) {
          p.on_record(r, at);
          if (i == 0) {
            first_end = at + r.header.size + perfdata::trailing_payload(r.header.type, r.bytes);
          }
        },
        &skipped[i]);
  };
  try {
    std::thread second(walk, 1, seam, end);
    walk(0, begin, seam);
    second.join();
  } catch (const std::system_error&) {
    return std::nullopt;  // no thread
  }
  if (!walked[0].ok() || !walked[1].ok() || first_end != seam) return std::nullopt;
  for (int i = 0; i < 2; i++) {
    for (const auto& [type, n] : skipped[i].unknown_record_types) {
      counters_[Diag::kRecordsUnknownType] += n;
    }
  }
  return pieces;
}

Status Session::pass1(const SessionOptions& options) {
  const perfdata::Features& f = reader_.features();
  header_.host = f.hostname.value_or("");
  header_.kernel = f.osrelease.value_or("");
  header_.arch = f.arch.value_or("");
  // bpfprof writes its name and versions there, perf its bare version.
  if (f.version) {
    header_.recorded_by = f.version->starts_with("bpfprof") ? *f.version : "perf " + *f.version;
  }
  for (size_t i = 0; i < reader_.attrs().size(); i++) {
    const std::string& name = reader_.attrs()[i].name;
    header_.events.push_back(name.empty() ? "event" + std::to_string(i) : name);
  }
  counters_[Diag::kFeatureSectionsUnreadable] = reader_.feature_errors().size();

  std::optional<perfdata::KallsymsTable> user_kallsyms;
  if (!options.kallsyms.empty()) {
    BPFPROF_ASSIGN_OR_RETURN(user_kallsyms, read_user_kallsyms(options.kallsyms));
  }
  header_.kernel_symbols = kernel_symbols_note(f, options.kallsyms);
  // Made before the walk: it opens the kallsyms snapshot meanwhile.
  symbolizer_ = std::make_unique<symbols::Symbolizer>(
      f, symbols::Symbolizer::Options{options.symfs, options.read_elf, std::move(user_kallsyms)});
  const uint64_t data_begin = reader_.data_offset();
  const uint64_t data_end = data_begin + reader_.data_size();
  progress_ = options.progress;
  if (progress_) progress_->begin_file(reader_.data_size());

  auto pieces = walk_in_parallel(options.parallel_min_bytes);
  if (!pieces) {
    if (progress_) progress_->begin_file(reader_.data_size());  // forget what the halves told
    pieces.emplace();
    pieces->push_back(std::make_unique<Piece>(*this));
    Piece& whole = *pieces->back();
    whole.dropped = data_begin;
    whole.end = data_end;
    Status walked = reader_.for_each_record(
        [&](const perf::RecordView& r, uint64_t at) { whole.on_record(r, at); });
    reader_.drop_pages(data_begin, data_end);
    if (!walked.ok()) return walked;
    compressed_ = reader_.stats().compressed_records > 0;
    // The reader skips record types it does not know and counts them.
    for (const auto& [type, n] : reader_.stats().unknown_record_types) {
      counters_[Diag::kRecordsUnknownType] += n;
    }
  }
  pass1_pieces_ = pieces->size();
  reader_.drop_pages(data_begin, data_end);
  counters_[Diag::kFeatureSectionsUnknown] = reader_.stats().unknown_features;

  // The pieces joined in file order. perf's ordering contract: after a
  // FINISHED_ROUND, no record older than the newest record before the
  // *previous* round may follow. A side-band record that breaks it is counted
  // (the Symbolizer still applies it at its time); for script, the same contract
  // over samples and side-band together (RoundClock) says whether emitting at
  // round ends gives the time order.
  std::vector<Sideband> sideband;
  RoundClock clock;
  uint64_t sb_newest = 0, sb_newest_at_round = 0, flushed_up_to = 0;
  uint64_t previous_round_samples = 0;
  Piece::Segment open;  // the segment a piece ended in, continued by the next
  for (size_t pi = 0; pi < pieces->size(); pi++) {
    Piece& p = *(*pieces)[pi];
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

  // In file order: the Symbolizer puts them in time order.
  for (const Sideband& s : sideband) symbolizer_->add_sideband(s.record, *s.layout);
  symbolizer_->finish();
  // A snapshot the reader left packed is decoded by the symbolizer.
  if (symbolizer_->kallsyms_error()) counters_[Diag::kFeatureSectionsUnreadable]++;
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
