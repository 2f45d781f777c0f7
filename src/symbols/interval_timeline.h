// SPDX-License-Identifier: Apache-2.0
// IntervalTimeline: address ranges [start, end) that are alive for time ranges
// [t_begin, t_end), with history kept. Pass 1 adds and closes entries in time
// order; build() then splits the address space at every boundary into
// segments and, per segment, the time axis into runs with one winner each, so
// a lookup is two binary searches with no allocation and no locks. Overlaps
// are resolved per (address, time): higher priority wins (a precise BPF
// program over a page-sized trampoline), then the later registration (a newer
// mmap over an older one), then the later-added entry.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace bpfprof::symbols {

inline constexpr uint64_t kForever = std::numeric_limits<uint64_t>::max();

// A process-wide number for every index built (never 0), so a thread's memory
// of its last lookup is never applied to another index.
inline uint64_t next_timeline_serial() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

template <class Payload>
class IntervalTimeline {
 public:
  static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

  struct Entry {
    uint64_t start = 0, end = 0;             // address range
    uint64_t t_begin = 0, t_end = kForever;  // alive in [t_begin, t_end)
    uint8_t priority = 0;
    Payload payload{};
  };

  // What find() saw: the winning entry (kNone if nothing alive at that time)
  // and whether any entry ever covered the address.
  struct Hit {
    uint32_t entry = kNone;
    bool known_range = false;
    // The times around the asked one for which the answer at this address
    // is the same: [t_from, t_to).
    uint64_t t_from = 0, t_to = kForever;
  };

  uint32_t add(uint64_t start, uint64_t end, uint64_t t_begin, uint8_t priority, Payload p) {
    entries_.push_back(Entry{start, end, t_begin, kForever, priority, std::move(p)});
    return static_cast<uint32_t>(entries_.size() - 1);
  }
  // Ends entry i at t_end (never before it began).
  void close(uint32_t i, uint64_t t_end) {
    Entry& e = entries_[i];
    if (t_end < e.t_end) e.t_end = std::max(t_end, e.t_begin);
  }
  Entry& entry(uint32_t i) { return entries_[i]; }
  const Entry& entry(uint32_t i) const { return entries_[i]; }
  size_t size() const { return entries_.size(); }
  const std::vector<Entry>& entries() const { return entries_; }

  // Builds the lookup index; entries must not change afterwards.
  void build();

  // Samples come in runs from the same code (per CPU; a time-sorted walk
  // interleaves the CPUs' runs): each thread remembers the segment and run of
  // its last few answers (per timeline build), so a repeat costs a few
  // comparisons instead of two binary searches.
  Hit find(uint64_t addr, uint64_t time) const {
    // Outside every range ever known (kernel text, for the BPF timeline).
    if (bounds_.size() < 2 || addr < bounds_.front() || addr >= bounds_.back()) return {};
    thread_local Recent recent;
    LastHit* last = nullptr;
    for (LastHit& h : recent.hits) {
      if (h.serial == serial_ && addr >= bounds_[h.seg] && addr < bounds_[h.seg + 1]) {
        last = &h;
        break;
      }
    }
    if (last == nullptr) {
      auto it = std::upper_bound(bounds_.begin(), bounds_.end(), addr);
      const size_t seg = static_cast<size_t>(it - bounds_.begin()) - 1;
      last = &recent.hits[recent.next++ % kRecent];
      *last = LastHit{serial_, seg, run_begin_[seg]};
    }
    const uint32_t r0 = run_begin_[last->seg], r1 = run_begin_[last->seg + 1];
    if (r0 == r1) return {};  // a gap between ranges
    auto hit = [&](uint32_t r) {
      return Hit{runs_[r].entry, true, runs_[r].t_from, r + 1 == r1 ? kForever : runs_[r + 1].t_from};
    };
    const uint32_t r = last->run;
    if (time >= runs_[r].t_from && (r + 1 == r1 || time < runs_[r + 1].t_from)) return hit(r);
    auto rit = std::upper_bound(runs_.begin() + r0, runs_.begin() + r1, time,
                                [](uint64_t t, const Run& run) { return t < run.t_from; });
    // The first run of a segment starts at time 0, so rit > begin + r0.
    last->run = static_cast<uint32_t>(std::prev(rit) - runs_.begin());
    return hit(last->run);
  }

 private:
  struct Run {
    uint64_t t_from = 0;
    uint32_t entry = kNone;
  };
  struct LastHit {
    uint64_t serial = 0;  // 0: none (build() hands out serials from 1)
    size_t seg = 0;
    uint32_t run = 0;
  };
  static constexpr size_t kRecent = 4;
  struct Recent {
    LastHit hits[kRecent];
    size_t next = 0;  // the slot a miss replaces (round robin)
  };

  bool better(uint32_t a, uint32_t b) const {  // does a win over b?
    const Entry& x = entries_[a];
    const Entry& y = entries_[b];
    if (x.priority != y.priority) return x.priority > y.priority;
    if (x.t_begin != y.t_begin) return x.t_begin > y.t_begin;
    return a > b;
  }
  static bool alive_ever(const Entry& e) { return e.start < e.end && e.t_begin < e.t_end; }

  std::vector<Entry> entries_;
  std::vector<uint64_t> bounds_;     // sorted, unique segment boundaries
  std::vector<uint32_t> run_begin_;  // per segment: index of its first run; one extra at the end
  std::vector<Run> runs_;
  uint64_t serial_ = 0;  // which build() made the index (see find())
};

template <class Payload>
void IntervalTimeline<Payload>::build() {
  serial_ = next_timeline_serial();
  bounds_.clear();
  run_begin_.clear();
  runs_.clear();
  for (const Entry& e : entries_) {
    if (!alive_ever(e)) continue;
    bounds_.push_back(e.start);
    bounds_.push_back(e.end);
  }
  std::sort(bounds_.begin(), bounds_.end());
  bounds_.erase(std::unique(bounds_.begin(), bounds_.end()), bounds_.end());
  if (bounds_.size() < 2) return;
  const size_t nseg = bounds_.size() - 1;

  // Which entries cover each segment (compressed rows).
  auto seg_range = [&](const Entry& e) {
    size_t a = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), e.start) - bounds_.begin());
    size_t b = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), e.end) - bounds_.begin());
    return std::pair{a, b};
  };
  std::vector<uint32_t> cover_begin(nseg + 1, 0);
  for (const Entry& e : entries_) {
    if (!alive_ever(e)) continue;
    auto [a, b] = seg_range(e);
    for (size_t s = a; s < b; ++s) ++cover_begin[s + 1];
  }
  for (size_t s = 0; s < nseg; ++s) cover_begin[s + 1] += cover_begin[s];
  std::vector<uint32_t> cover(cover_begin[nseg]);
  std::vector<uint32_t> fill(cover_begin.begin(), cover_begin.end() - 1);
  for (uint32_t i = 0; i < entries_.size(); ++i) {
    if (!alive_ever(entries_[i])) continue;
    auto [a, b] = seg_range(entries_[i]);
    for (size_t s = a; s < b; ++s) cover[fill[s]++] = i;
  }

  // Per segment, sweep the begin/end times of its entries; the active set is
  // small (what is alive at one instant), so the winner is found by a scan.
  struct Event {
    uint64_t time;
    uint32_t entry;
    bool begin;
  };
  std::vector<Event> events;
  std::vector<uint32_t> active;
  run_begin_.reserve(nseg + 1);
  for (size_t s = 0; s < nseg; ++s) {
    run_begin_.push_back(static_cast<uint32_t>(runs_.size()));
    events.clear();
    active.clear();
    for (uint32_t k = cover_begin[s]; k < cover_begin[s + 1]; ++k) {
      const Entry& e = entries_[cover[k]];
      events.push_back({e.t_begin, cover[k], true});
      if (e.t_end != kForever) events.push_back({e.t_end, cover[k], false});
    }
    if (events.empty()) continue;
    std::sort(events.begin(), events.end(),
              [](const Event& a, const Event& b) { return a.time < b.time; });
    if (events.front().time > 0) runs_.push_back({0, kNone});
    for (size_t i = 0; i < events.size();) {
      const uint64_t t = events[i].time;
      for (; i < events.size() && events[i].time == t; ++i) {
        if (events[i].begin) {
          active.push_back(events[i].entry);
        } else {
          active.erase(std::find(active.begin(), active.end(), events[i].entry));
        }
      }
      uint32_t winner = kNone;
      for (uint32_t a : active) {
        if (winner == kNone || better(a, winner)) winner = a;
      }
      if (runs_.size() > run_begin_.back() && runs_.back().entry == winner) continue;
      runs_.push_back({t, winner});
    }
  }
  run_begin_.push_back(static_cast<uint32_t>(runs_.size()));
}

}  // namespace bpfprof::symbols
