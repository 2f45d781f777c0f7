// SPDX-License-Identifier: Apache-2.0
// The generic (address x time) timeline: history kept, overlaps resolved by
// priority, then by later registration.
#include "symbols/interval_timeline.h"

#include <gtest/gtest.h>

#include <vector>

namespace bpfprof::symbols {
namespace {

using Timeline = IntervalTimeline<int>;

struct Case {
  uint64_t addr, time;
  int expect;  // payload, or -1 for nothing alive
  bool known = true;
};

void check(const Timeline& t, const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "addr " << c.addr << " time " << c.time);
    auto hit = t.find(c.addr, c.time);
    EXPECT_EQ(hit.known_range, c.known);
    EXPECT_EQ(hit.entry == Timeline::kNone ? -1 : t.entry(hit.entry).payload, c.expect);
  }
}

TEST(IntervalTimelineTest, EmptyFindsNothing) {
  Timeline t;
  t.build();
  check(t, {{0, 0, -1, false}, {100, 5, -1, false}});
}

TEST(IntervalTimelineTest, RegisterUnregisterReuse) {
  Timeline t;
  uint32_t a = t.add(100, 200, 10, 1, 1);
  t.close(a, 20);
  t.add(100, 150, 30, 1, 2);
  t.build();
  check(t, {{120, 5, -1},      {120, 10, 1},     {199, 19, 1},    {120, 20, -1},
            {120, 30, 2},      {160, 30, -1},    {160, 15, 1},    {99, 15, -1, false},
            {200, 15, -1, false}});
}

TEST(IntervalTimelineTest, PriorityThenLaterRegistration) {
  Timeline t;
  t.add(0, 4096, 0, 1, 10);     // page-sized, low priority
  t.add(256, 384, 0, 2, 11);    // precise, inside it
  t.add(1000, 1100, 50, 1, 12); // same priority, registered later: wins where it overlaps
  t.add(1050, 1060, 0, 1, 13);  // same priority, older than 12
  t.build();
  check(t, {{10, 0, 10}, {300, 0, 11}, {400, 0, 10}, {1050, 10, 13}, {1050, 60, 12}, {1020, 10, 10},
            {1020, 60, 12}, {5000, 0, -1, false}});
}

TEST(IntervalTimelineTest, CloseNeverBeforeBegin) {
  Timeline t;
  uint32_t a = t.add(0, 10, 100, 0, 1);
  t.close(a, 50);  // out of order: becomes empty, never alive
  t.build();
  check(t, {{5, 100, -1, false}});
}

// Every answer of find() against a scan of all entries, over random entries
// and lookups in orders that do and do not repeat the previous segment and
// run (find() remembers its last answer per thread), alternating between two
// timelines (the memory of one must not answer for the other).
TEST(IntervalTimelineTest, MatchesAScanInAnyLookupOrder) {
  uint64_t seed = 12345;
  auto rnd = [&](uint64_t n) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (seed >> 33) % n;
  };
  auto make = [&](Timeline& t, int payload_base) {
    for (int i = 0; i < 60; i++) {
      const uint64_t start = rnd(1000), len = 1 + rnd(200), t_begin = rnd(500);
      const uint32_t e = t.add(start, start + len, t_begin, static_cast<uint8_t>(rnd(3)),
                               payload_base + i);
      if (rnd(3) != 0) t.close(e, t_begin + rnd(300));
    }
    t.build();
  };
  auto scan = [](const Timeline& t, uint64_t addr, uint64_t time) {
    int best = -1;
    bool known = false;
    for (uint32_t i = 0; i < t.size(); i++) {
      const auto& e = t.entry(i);
      if (addr < e.start || addr >= e.end || e.t_begin >= e.t_end) continue;
      known = true;
      if (time < e.t_begin || time >= e.t_end) continue;
      if (best >= 0) {
        const auto& b = t.entry(static_cast<uint32_t>(best));
        const bool wins = e.priority != b.priority ? e.priority > b.priority
                          : e.t_begin != b.t_begin ? e.t_begin > b.t_begin
                                                   : true;  // later added
        if (!wins) continue;
      }
      best = static_cast<int>(i);
    }
    return std::pair{best < 0 ? -1 : t.entry(static_cast<uint32_t>(best)).payload, known};
  };
  Timeline a, b;
  make(a, 0);
  make(b, 1000);
  auto expect_same = [&](const Timeline& t, uint64_t addr, uint64_t time) {
    const auto [payload, known] = scan(t, addr, time);
    const auto hit = t.find(addr, time);
    ASSERT_EQ(hit.entry == Timeline::kNone ? -1 : t.entry(hit.entry).payload, payload)
        << "addr " << addr << " time " << time;
    ASSERT_EQ(hit.known_range, known) << "addr " << addr << " time " << time;
  };
  for (int i = 0; i < 5000; i++) {
    const uint64_t addr = rnd(1300), time = rnd(900);
    expect_same(a, addr, time);
    // The same address at later and earlier times, then a neighbour.
    expect_same(a, addr, time + rnd(50));
    expect_same(a, addr, time > 20 ? time - 20 : 0);
    expect_same(a, addr + 1, time);
    expect_same(b, addr, time);
    expect_same(a, addr, time);
  }
}

}  // namespace
}  // namespace bpfprof::symbols
