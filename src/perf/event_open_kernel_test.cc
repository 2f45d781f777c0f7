// SPDX-License-Identifier: Apache-2.0
// Real kernel: perf_event_open and the ring buffer on this machine.
#include "perf/event_open.h"

#include <sys/prctl.h>
#include <time.h>

#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "perf/records.h"
#include "perf/ring_buffer.h"

namespace bpfprof::perf {
namespace {

// Real kernel: a dummy event on this thread reports our own rename as COMM.
TEST(EventOpenKernelTest, CommRecordThroughRingBuffer) {
  const uint64_t st = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                      PERF_SAMPLE_CPU;
  SidebandConfig config{.ksymbol = false, .bpf_event = false, .mmap2 = false, .comm = true,
                        .task = false, .wakeup_events = 1};
  perf_event_attr attr = make_sideband_attr(config, st);
  auto fd = open_event(attr, /*pid=*/0, /*cpu=*/-1);
  if (!fd.ok() && fd.error().code == Errc::kPermission) {
    GTEST_SKIP() << fd.error().to_string() << " (see /proc/sys/kernel/perf_event_paranoid)";
  }
  ASSERT_TRUE(fd.ok()) << fd.error().to_string();
  auto rb = RingBuffer::map(fd->get(), 4);
  ASSERT_TRUE(rb.ok()) << rb.error().to_string();
  auto id = event_id(fd->get());
  ASSERT_TRUE(id.ok()) << id.error().to_string();
  ASSERT_TRUE(enable_event(fd->get()).ok());

  char old_name[17] = {};
  ASSERT_EQ(prctl(PR_GET_NAME, old_name), 0);
  const uint64_t before = monotonic_ns();
  ASSERT_EQ(prctl(PR_SET_NAME, "bpfprof-test"), 0);
  const uint64_t after = monotonic_ns();
  prctl(PR_SET_NAME, old_name);

  auto layout = SampleLayout::from_attr(attr);
  ASSERT_TRUE(layout.ok());
  int comms = 0;
  auto n = rb->for_each_record([&](const RecordView& r) {
    if (r.header.type != kRecordComm) return;
    auto comm = Comm::parse(r, *layout);
    ASSERT_TRUE(comm.ok()) << comm.error().to_string();
    if (comm->comm != "bpfprof-test") return;
    ++comms;
    EXPECT_EQ(comm->tid, static_cast<uint32_t>(gettid()));
    const auto t = layout->time_of(r);
    ASSERT_TRUE(t.has_value());
    EXPECT_GE(*t, before);
    EXPECT_LE(*t, after);
    EXPECT_EQ(*t, comm->sample_id.time);
    EXPECT_EQ(layout->id_of(r), std::optional<uint64_t>(*id));
  });
  ASSERT_TRUE(n.ok()) << n.error().to_string();
  EXPECT_GT(*n, 0u);
  EXPECT_EQ(comms, 1);
  EXPECT_EQ(rb->peek().size(), 0u);  // everything read was consumed
  EXPECT_TRUE(disable_event(fd->get()).ok());
}

}  // namespace
}  // namespace bpfprof::perf
