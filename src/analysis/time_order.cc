// SPDX-License-Identifier: Apache-2.0
#include "analysis/time_order.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "analysis/session.h"

namespace bpfprof::analysis {
namespace {

// Below this many samples waiting at once, the round merge is used however
// small the file (the sorted pairs would not be smaller).
constexpr uint64_t kMinPending = 1 << 16;

// The round merge: samples are copied into a byte store when they are read
// and released, sorted, when a round end makes them safe to emit.
class RoundMerger {
 public:
  RoundMerger(const Session& session, size_t batch, const OrderedBatchFn& fn,
              bool flush_at_rounds)
      : session_(session), batch_(batch), fn_(fn), flush_at_rounds_(flush_at_rounds) {}

  Status run();

 private:
  struct Entry {
    uint64_t time;
    uint64_t seq;     // file order, for equal times
    size_t at;        // where its bytes start in bytes_
    uint64_t offset;  // the record's offset in the file (error messages)
    const perf::SampleLayout* layout;
  };

  void on_record(const perf::RecordView& r);
  // Moves the pending samples at or before `limit` to ready_, in order.
  void release(uint64_t limit);
  // Hands ready_ out in batches and keeps only pending bytes in the store.
  Status emit();

  const Session& session_;
  const size_t batch_;
  const OrderedBatchFn& fn_;
  const bool flush_at_rounds_;
  RoundClock clock_;
  uint64_t seq_ = 0;
  // Bytes of the pending and ready samples; spare_ receives the pending ones
  // when ready ones are dropped (both keep their capacity).
  RecordStore bytes_, spare_;
  std::vector<Entry> pending_, ready_;
  std::vector<OrderedSample> out_;
  Status failed_ = ok_status();
};

void RoundMerger::on_record(const perf::RecordView& r) {
  if (!failed_.ok()) return;
  // The same records and times as pass 1's clock, so the same limits.
  const uint32_t type = r.header.type;
  if (type == perf::kRecordFinishedRound) {
    const uint64_t limit = clock_.end_round();
    if (!flush_at_rounds_) return;
    release(limit);
    if (ready_.size() >= batch_) failed_ = emit();
    return;
  }
  if (type >= perf::kRecordHeaderAttr) return;
  const perfdata::FileAttr* attr = session_.reader().attr_for(r);
  if (attr == nullptr) return;
  const std::optional<uint64_t> time = attr->layout.time_of(r);
  if (time) clock_.saw(*time);
  if (type != perf::kRecordSample) return;
  const size_t at = bytes_.append(r.bytes);
  pending_.push_back(Entry{time.value_or(0), seq_++, at, r.offset, &attr->layout});
}

void RoundMerger::release(uint64_t limit) {
  auto later = std::partition(pending_.begin(), pending_.end(),
                              [&](const Entry& e) { return e.time <= limit; });
  const size_t first = ready_.size();
  ready_.insert(ready_.end(), pending_.begin(), later);
  pending_.erase(pending_.begin(), later);
  // Everything already in ready_ is at or before every released sample (no
  // sample is older than a limit passed: SampleOrder::by_rounds), so sorting
  // the new part keeps ready_ sorted.
  std::sort(ready_.begin() + static_cast<ptrdiff_t>(first), ready_.end(),
            [](const Entry& a, const Entry& b) {
              return a.time != b.time ? a.time < b.time : a.seq < b.seq;
            });
}

Status RoundMerger::emit() {
  for (size_t i = 0; i < ready_.size(); i += batch_) {
    const size_t end = std::min(ready_.size(), i + batch_);
    out_.clear();
    for (size_t k = i; k < end; k++) {
      const Entry& e = ready_[k];
      perf::RecordView v;
      v.header = load_unaligned<perf::RecordHeader>(bytes_.at(e.at));
      v.bytes = Bytes(bytes_.at(e.at), v.header.size);
      v.offset = e.offset;
      out_.push_back(OrderedSample{v, e.layout});
    }
    BPFPROF_TRY(fn_(out_));
  }
  ready_.clear();
  // Compact: only the pending samples' bytes stay.
  spare_.clear();
  for (Entry& e : pending_) {
    const uint16_t size = load_unaligned<perf::RecordHeader>(bytes_.at(e.at)).size;
    e.at = spare_.append(Bytes(bytes_.at(e.at), size));
  }
  std::swap(bytes_, spare_);
  return ok_status();
}

Status RoundMerger::run() {
  BPFPROF_TRY(session_.for_each_record(
      [&](const perf::RecordView& r, uint64_t) { on_record(r); }));
  if (!failed_.ok()) return failed_;
  release(std::numeric_limits<uint64_t>::max());
  return emit();
}

// Plain files whose samples break the round contract: sort (time, offset).
Status sorted_offsets(const Session& session, size_t batch, const OrderedBatchFn& fn) {
  std::vector<std::pair<uint64_t, uint64_t>> keys;
  keys.reserve(session.sample_count());
  BPFPROF_TRY(session.for_each_sample(
      0, session.chunk_count(), [&](const perf::RecordView& r, const perf::SampleLayout& layout) {
        keys.emplace_back(layout.time_of(r).value_or(0), r.offset);
      }));
  // Offsets grow in file order: sorting the pairs is a stable sort by time.
  std::sort(keys.begin(), keys.end());
  std::vector<OrderedSample> out;
  for (size_t i = 0; i < keys.size(); i += batch) {
    out.clear();
    for (size_t k = i; k < std::min(keys.size(), i + batch); k++) {
      BPFPROF_ASSIGN_OR_RETURN(perf::RecordView r, session.record_at(keys[k].second));
      const perfdata::FileAttr* attr = session.reader().attr_for(r);
      if (attr == nullptr) continue;  // not walked by for_each_sample either
      out.push_back(OrderedSample{r, &attr->layout});
    }
    BPFPROF_TRY(fn(out));
    // Reads jump around the file: let go of what this batch touched.
    session.drop_pages();
  }
  return ok_status();
}

// Few enough samples wait for a round end at once that rounds, not the whole
// file, bound what is held (the round merge's memory, a window's overlap).
bool rounds_small(const Session& session) {
  return session.sample_order().max_pending <=
         std::max<uint64_t>(kMinPending, session.sample_count() / 16);
}

// Where round segment j starts: segment j holds the records after round end j
// (the data start for j = 0) up to round end j + 1 (the data end after the last).
uint64_t segment_start_of(size_t j, std::span<const RoundMark> rounds, uint64_t data_begin,
                          uint64_t data_end) {
  return j == 0 ? data_begin : j <= rounds.size() ? rounds[j - 1].offset : data_end;
}

}  // namespace

void RecordStore::grow(size_t more) {
  const size_t capacity = std::max({size_ + more, 2 * capacity_, size_t{1} << 16});
  auto data = std::make_unique_for_overwrite<std::byte[]>(capacity);
  if (size_ > 0) std::memcpy(data.get(), data_.get(), size_);
  data_ = std::move(data);
  capacity_ = capacity;
}

Status for_each_in_time_order(const Session& session, size_t batch, const OrderedBatchFn& fn) {
  batch = std::max<size_t>(batch, 1);
  const SampleOrder& order = session.sample_order();
  if (!session.compressed() && !(order.by_rounds && rounds_small(session))) {
    return sorted_offsets(session, batch, fn);
  }
  return RoundMerger(session, batch, fn, order.by_rounds).run();
}

std::vector<TimeWindow> plan_time_windows(std::span<const RoundMark> rounds, uint64_t data_begin,
                                          uint64_t data_end, uint64_t target_bytes) {
  // Segment j holds the records after round end j (the data start for j = 0)
  // up to round end j + 1 (the data end after the last). limit(j) is the
  // clock's limit after round end j. Under the contract a sample of segment j
  // has limit(j) <= time (it is not older than the limit passed) and
  // time <= limit(j + 2) (the newest time at round end j + 1 becomes the
  // limit at round end j + 2); past the last round there is no upper bound.
  const size_t rounds_n = rounds.size();
  auto limit = [&](size_t j) { return j == 0 ? uint64_t{0} : rounds[j - 1].limit; };
  auto segment_start = [&](size_t j) { return segment_start_of(j, rounds, data_begin, data_end); };
  // The first j with limit(j) > t (limits never decrease; limit(0) = 0 <= t).
  auto first_above = [&](uint64_t t) -> size_t {
    auto it = std::upper_bound(rounds.begin(), rounds.end(), t,
                               [](uint64_t v, const RoundMark& m) { return v < m.limit; });
    return 1 + static_cast<size_t>(it - rounds.begin());
  };

  // Cut at a round's limit once the window since the last cut spans the
  // target; equal limits cannot separate anything.
  std::vector<uint64_t> cuts;
  uint64_t own_start = data_begin;
  for (size_t j = 1; j <= rounds_n; j++) {
    const uint64_t cut = limit(j);
    if (segment_start(j) - own_start < target_bytes) continue;
    if (cut == std::numeric_limits<uint64_t>::max()) break;  // nothing can follow it
    if (!cuts.empty() && cut <= cuts.back()) continue;
    cuts.push_back(cut);
    own_start = segment_start(j);
  }

  std::vector<TimeWindow> windows(cuts.size() + 1);
  for (size_t k = 0; k < windows.size(); k++) {
    TimeWindow& w = windows[k];
    const bool first = k == 0, last = k == cuts.size();
    w.first_time = first ? 0 : cuts[k - 1] + 1;
    w.last_time = last ? std::numeric_limits<uint64_t>::max() : cuts[k];
    // Times above cuts[k - 1]: segment j qualifies when limit(j + 2) > it,
    // i.e. from two segments before the first limit above it.
    const size_t from = first ? 0 : first_above(cuts[k - 1]);
    w.begin = segment_start(from >= 2 ? from - 2 : 0);
    // Times up to cuts[k]: segments whose limit is at most that.
    w.end = last ? data_end : segment_start(first_above(cuts[k]));
  }
  for (size_t k = 0; k < windows.size(); k++) {
    const uint64_t next = k + 1 < windows.size() ? windows[k + 1].begin : data_end;
    windows[k].progress_bytes = next - windows[k].begin;
  }
  return windows;
}

void narrow_time_windows(std::vector<TimeWindow>& windows, std::span<const RoundMark> rounds,
                         std::span<const SampleOrder::SampleSpan> segments, uint64_t data_begin,
                         uint64_t data_end) {
  if (segments.size() != rounds.size() + 1) return;
  auto segment_start = [&](size_t j) { return segment_start_of(j, rounds, data_begin, data_end); };
  // The segment starting at `offset` (a window edge is always a segment start).
  auto segment_at = [&](uint64_t offset) -> size_t {
    if (offset <= data_begin) return 0;
    if (offset >= data_end) return rounds.size() + 1;
    auto it = std::lower_bound(rounds.begin(), rounds.end(), offset,
                               [](const RoundMark& m, uint64_t v) { return m.offset < v; });
    return 1 + static_cast<size_t>(it - rounds.begin());
  };
  for (TimeWindow& w : windows) {
    const size_t lo = segment_at(w.begin), hi = std::min(segment_at(w.end), segments.size());
    size_t first = hi, last = hi;
    for (size_t j = lo; j < hi; j++) {
      const SampleOrder::SampleSpan& s = segments[j];
      if (s.min > s.max || s.max < w.first_time || s.min > w.last_time) continue;
      if (first == hi) first = j;
      last = j;
    }
    if (first == hi) {
      w.end = w.begin;  // no sample of this window's times
      continue;
    }
    w.begin = segment_start(first);
    w.end = segment_start(last + 1);
  }
}

std::vector<TimeWindow> plan_time_windows(const Session& session, uint64_t target_bytes) {
  const SampleOrder& order = session.sample_order();
  if (session.compressed() || !order.by_rounds || !rounds_small(session)) return {};
  const uint64_t begin = session.reader().data_offset();
  const uint64_t end = begin + session.reader().data_size();
  std::vector<TimeWindow> windows = plan_time_windows(order.rounds, begin, end, target_bytes);
  narrow_time_windows(windows, order.rounds, order.segments, begin, end);
  return windows;
}

Status WindowSamples::collect(const Session& session, const TimeWindow& window) {
  keys_.clear();
  kept_.clear();
  // The window is read whole into hold_ (one pread, no page faults of the
  // mapping): the kept views point there until the next collect.
  const perfdata::FileReader& reader = session.reader();
  perfdata::AttrMemo attr_of(reader);
  BPFPROF_TRY(reader.for_each_record_in(
      window.begin, window.end,
      [&](const perf::RecordView& r, uint64_t) {
        if (r.header.type != perf::kRecordSample) return;
        const perfdata::FileAttr* attr = attr_of(r);
        if (attr == nullptr) return;  // not emitted by the other orders either
        const uint64_t time = attr->layout.time_of(r).value_or(0);
        if (time < window.first_time || time > window.last_time) return;
        keys_.push_back(Key{time, kept_.size()});
        kept_.push_back(OrderedSample{r, &attr->layout});
      },
      nullptr, &hold_));
  session.count_progress(window.progress_bytes);
  sort_keys();
  out_.resize(keys_.size());
  for (size_t i = 0; i < keys_.size(); i++) out_[i] = kept_[keys_[i].index];
  return ok_status();
}

void WindowSamples::sort_keys() {
  // keys_ is in file order (index ascending), so sorting by (time, index) is
  // a stable sort by time. It is mostly ascending runs (a round holds each
  // CPU's records in time order): merge the runs, pairwise, until one is left.
  const size_t n = keys_.size();
  runs_.clear();
  runs_.push_back(0);
  for (size_t i = 1; i < n; i++) {
    if (keys_[i].time < keys_[i - 1].time) runs_.push_back(i);
  }
  runs_.push_back(n);
  auto less = [](const Key& a, const Key& b) {
    return a.time != b.time ? a.time < b.time : a.index < b.index;
  };
  if (runs_.size() - 1 > n / 8) {  // short runs: merging them gains nothing
    std::sort(keys_.begin(), keys_.end(), less);
    return;
  }
  scratch_.resize(n);
  while (runs_.size() > 2) {
    size_t kept_runs = 0;
    for (size_t r = 0; r + 1 < runs_.size(); r += 2) {
      const size_t begin = runs_[r], mid = runs_[r + 1];
      const size_t end = r + 2 < runs_.size() ? runs_[r + 2] : mid;
      std::merge(keys_.begin() + static_cast<ptrdiff_t>(begin),
                 keys_.begin() + static_cast<ptrdiff_t>(mid),
                 keys_.begin() + static_cast<ptrdiff_t>(mid),
                 keys_.begin() + static_cast<ptrdiff_t>(end),
                 scratch_.begin() + static_cast<ptrdiff_t>(begin), less);
      runs_[kept_runs++] = begin;
    }
    runs_[kept_runs++] = n;
    runs_.resize(kept_runs);
    std::swap(keys_, scratch_);
  }
}

}  // namespace bpfprof::analysis
