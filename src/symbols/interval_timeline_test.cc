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

}  // namespace
}  // namespace bpfprof::symbols
