// SPDX-License-Identifier: Apache-2.0
// Real-kernel tests of the capture's links when its ring is full or the
// link is gone first: a link the ring could not take is queried by its id
// while it still exists, and one gone before its query is counted in
// section 254's links_lost — none vanishes silently.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "capture/capture.h"
#include "host/attach_points.h"
#include "perfdata/reader.h"
#include "record/recorder.h"
#include "testing/capture_kernel.h"
#include "testing/subprocess.h"

namespace bpfprof::capture {
namespace {

using namespace testing::capture_kernel;

// Links of a type the capture does not name (perf_event links of a plain
// software event) are queried by id when the recorder drains the capture;
// ones closed at once are gone by then. Each is named by id or counted in
// section 254's links_lost: none vanishes silently. (Which of the two
// depends on when the drain comes: the test asserts the accounting.)
TEST(CaptureRecordKernelTest, LinksGoneBeforeTheirQueryAreCounted) {
  bpfprof::testing::TempDir dir;
  record::RecordOptions o = system_wide(dir, "links.data", 1.0);
  UniqueFd prog = load_trivial(BPF_PROG_TYPE_PERF_EVENT, "bpfprof_pe");
  ASSERT_TRUE(prog.valid());
  std::set<uint32_t> ours;
  auto stats = record_while(o, [&] {
    for (int i = 0; i < 5; i++) {
      UniqueFd event = perf_event(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
      UniqueFd link(bpf_link_create(prog.get(), event.get(), BPF_PERF_EVENT, nullptr));
      if (link.valid()) ours.insert(link_id(link.get()));
    }
  });
  if (!stats.ok() && stats.error().code == Errc::kPermission) {
    BPFPROF_KERNEL_SKIP(stats.error().to_string());
  }
  ASSERT_TRUE(stats.ok()) << stats.error().to_string();
  if (!stats->enrichment.in_kernel) BPFPROF_KERNEL_SKIP("capture not used: " + stats->enrichment.capture_refused);
  ASSERT_EQ(ours.size(), 5u);
  auto reader = perfdata::FileReader::open(o.output);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  const perfdata::Features& f = reader->features();
  ASSERT_TRUE(f.attach.has_value());
  size_t named = 0;
  for (const perfdata::AttachEntry& e : f.attach->entries) {
    if (!ours.count(e.link_id)) continue;
    EXPECT_EQ(e.point, "perf_event");
    EXPECT_EQ(e.source, perfdata::AttachEntry::kById);
    named++;
  }
  EXPECT_LE(named, ours.size());
  EXPECT_GE(f.attach->links_lost + named, ours.size())
      << named << " named by id, " << f.attach->links_lost << " counted lost";
}

// A link of each kind, made by the tests below: a raw_tp link the capture
// names itself, and a perf_event link of a software event it leaves to the
// query by id.
struct TestLink {
  UniqueFd fd;
  uint32_t id = 0;
  bool raw_tp = false;
  std::string point() const { return raw_tp ? "raw_tp/task_rename" : "perf_event"; }
};

TestLink make_link(int raw_tp_prog, int pe_prog, bool raw_tp) {
  TestLink l;
  l.raw_tp = raw_tp;
  if (raw_tp) {
    l.fd = UniqueFd(bpf_raw_tracepoint_open("task_rename", raw_tp_prog));
  } else {
    UniqueFd event = perf_event(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
    if (event.valid()) {
      l.fd = UniqueFd(bpf_link_create(pe_prog, event.get(), BPF_PERF_EVENT, nullptr));
    }
  }
  if (l.fd.valid()) l.id = link_id(l.fd.get());
  return l;
}

// Nothing drains a capture ring of one page while the big-BTF programs load
// and links are made after them, so it fills and stays full: from then on
// each link's record cannot enter it. The capture counts each such link and
// sends its id apart; the namer queries it by id (a raw_tp link, which the
// capture would have named itself, comes back as kById with its point), and
// one closed before the query is counted lost. Deterministic: the ring is
// drained only when the test says.
TEST(CaptureKernelTest, LinksMissedByAFullRingAreQueriedById) {
  std::string why;
  CaptureConfig config;
  config.ring_bytes = 4096;
  auto capture = start_or_skip(config, why);
  if (!capture) BPFPROF_KERNEL_SKIP("capture cannot run: " + why);
  UniqueFd raw_prog = load_trivial(BPF_PROG_TYPE_RAW_TRACEPOINT, "bpfprof_rawtp");
  UniqueFd pe_prog = load_trivial(BPF_PROG_TYPE_PERF_EVENT, "bpfprof_pe");
  ASSERT_TRUE(raw_prog.valid() && pe_prog.valid());
  ASSERT_TRUE(capture->consume().ok());
  std::vector<CapturedLink> ignored;
  std::vector<uint32_t> ignored_ids;
  capture->take_links(ignored, ignored_ids);
  const uint64_t missed_before = capture->counters().links_missed;

  bpf_object* obj = nullptr;
  ASSERT_EQ(load_big_btf_programs(obj).size(), 1u);
  // Links until one missed the ring (at most 4096 / sizeof(capture_link)
  // fit, so the bound is never the reason), then three more: link records
  // are all one size, so each of these finds the ring as full.
  std::vector<TestLink> made;
  const size_t bound = 4096 / sizeof(capture_link) + 2;
  uint64_t missed_now = missed_before;
  for (size_t i = 0; i < bound && missed_now == missed_before; i++) {
    made.push_back(make_link(raw_prog.get(), pe_prog.get(), i % 2 == 0));
    ASSERT_TRUE(made.back().fd.valid()) << "link " << i << ": " << std::strerror(errno);
    missed_now = capture->counters().links_missed;
  }
  ASSERT_GT(missed_now, missed_before) << made.size() << " links, the ring never full";
  for (int i = 0; i < 3; i++) {
    made.push_back(make_link(raw_prog.get(), pe_prog.get(), !made.back().raw_tp));
    ASSERT_TRUE(made.back().fd.valid()) << std::strerror(errno);
  }
  missed_now = capture->counters().links_missed;
  // The last link (missed) is closed before anyone asks for it.
  TestLink& closed = made.back();
  closed.fd.reset();

  ASSERT_TRUE(capture->consume().ok());
  std::vector<CapturedLink> links;
  std::vector<uint32_t> missed;
  capture->take_links(links, missed);
  std::set<uint32_t> captured_ids, missed_ids(missed.begin(), missed.end());
  for (const CapturedLink& l : links) captured_ids.insert(l.link_id);
  size_t ours_missed = 0;
  bool raw_tp_missed = false;
  for (const TestLink& l : made) {
    SCOPED_TRACE("link " + std::to_string(l.id) + " " + l.point());
    // In exactly one of the two: sent whole, or its id sent apart.
    EXPECT_NE(captured_ids.count(l.id), missed_ids.count(l.id));
    if (missed_ids.count(l.id)) {
      ours_missed++;
      raw_tp_missed |= l.raw_tp;
    }
  }
  // Once full, the ring took no later link: the last three all missed.
  EXPECT_GE(ours_missed, 3u);
  for (size_t i = made.size() - 3; i < made.size(); i++) EXPECT_TRUE(missed_ids.count(made[i].id));
  EXPECT_TRUE(raw_tp_missed);
  EXPECT_GE(missed_now - missed_before, ours_missed);

  host::CapturedAttachNamer namer(std::nullopt, {});
  std::vector<perfdata::AttachEntry> entries;
  namer.name(links, missed, entries);
  std::map<uint32_t, std::vector<perfdata::AttachEntry>> by_link;
  for (const perfdata::AttachEntry& e : entries) by_link[e.link_id].push_back(e);
  for (const TestLink& l : made) {
    SCOPED_TRACE("link " + std::to_string(l.id) + " " + l.point());
    if (&l == &closed) {
      EXPECT_EQ(by_link.count(l.id), 0u) << "closed before its query, yet named";
      continue;
    }
    ASSERT_EQ(by_link[l.id].size(), 1u);
    const perfdata::AttachEntry& e = by_link[l.id].front();
    EXPECT_EQ(e.point, l.point());
    EXPECT_EQ(e.prog_id, prog_id(l.raw_tp ? raw_prog.get() : pe_prog.get()));
    // The capture names a raw_tp link it sent; everything else is by id.
    const bool by_capture = l.raw_tp && captured_ids.count(l.id);
    EXPECT_EQ(e.source,
              by_capture ? perfdata::AttachEntry::kCaptured : perfdata::AttachEntry::kById);
  }
  EXPECT_GE(namer.lost(), 1u) << "the closed link was not counted";
  capture->stop();
  EXPECT_EQ(capture->bad_records(), 0u);
  bpf_object__close(obj);
}

// Holds the recorder's drain loop: its progress callback (called on the
// drain thread after a pass) waits while the test works, so nothing drains
// the capture ring until release().
class DrainStall {
 public:
  record::RecordSink sink() {
    record::RecordSink s;
    s.progress = [this](const record::Progress&) {
      std::unique_lock lock(mu_);
      if (done_) return;
      held_ = true;
      cv_.notify_all();
      cv_.wait(lock, [this] { return done_; });
    };
    return s;
  }
  // Whether the drain loop was held within `limit`.
  bool wait_held(std::chrono::seconds limit) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [this] { return held_; });
  }
  void release() {
    std::lock_guard lock(mu_);
    done_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
  bool done_ = false;
};

// The same through the recorder and the file. With the drain loop held, a
// capture ring of one page is filled by the big-BTF programs and by the
// links made after them: at most 4096 / (sizeof(capture_link) + 8) link
// records fit even in an empty ring, so the links made past that count
// cannot enter it, whatever the timing. Section 254 then names every link
// still open at the end by the capture or by id (never only by the end
// listing), with its point: the raw_tp links past the count by id, which is
// the fallback. Links closed at once are named or counted in links_lost.
TEST(CaptureRecordKernelTest, LinksMadeWhileTheRingIsFullAreNamedOrCounted) {
  bpfprof::testing::TempDir dir;
  record::RecordOptions o = system_wide(dir, "full.data", 3.0);
  o.capture_ring_bytes = 4096;
  UniqueFd raw_prog = load_trivial(BPF_PROG_TYPE_RAW_TRACEPOINT, "bpfprof_rawtp");
  UniqueFd pe_prog = load_trivial(BPF_PROG_TYPE_PERF_EVENT, "bpfprof_pe");
  ASSERT_TRUE(raw_prog.valid() && pe_prog.valid());
  const size_t fit = 4096 / (sizeof(capture_link) + 8);
  std::vector<TestLink> kept;  // open until the recording has ended
  std::vector<uint32_t> brief;  // closed at once
  size_t big_btf = 0;
  bool held = false;
  DrainStall stall;
  auto stats = record_while(
      o,
      [&] {
        held = stall.wait_held(std::chrono::seconds(5));
        bpf_object* obj = nullptr;
        big_btf = load_big_btf_programs(obj).size();
        for (size_t i = 0; i < fit + 4; i++) {
          kept.push_back(make_link(raw_prog.get(), pe_prog.get(), i % 2 == 0));
          if (i % 4 == 3) brief.push_back(make_link(raw_prog.get(), pe_prog.get(), false).id);
        }
        stall.release();
        bpf_object__close(obj);
      },
      stall.sink());
  stall.release();
  if (!stats.ok() && stats.error().code == Errc::kPermission) {
    BPFPROF_KERNEL_SKIP(stats.error().to_string());
  }
  ASSERT_TRUE(stats.ok()) << stats.error().to_string();
  if (!stats->enrichment.in_kernel) {
    BPFPROF_KERNEL_SKIP("capture not used: " + stats->enrichment.capture_refused);
  }
  ASSERT_TRUE(held) << "the drain loop never called its progress callback";
  ASSERT_EQ(big_btf, 1u);
  ASSERT_EQ(kept.size(), fit + 4);
  for (const TestLink& l : kept) ASSERT_NE(l.id, 0u) << std::strerror(errno);
  for (uint32_t id : brief) ASSERT_NE(id, 0u);

  auto reader = perfdata::FileReader::open(o.output);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  const perfdata::Features& f = reader->features();
  ASSERT_TRUE(f.attach.has_value());
  ASSERT_TRUE(f.enrichment.has_value());
  EXPECT_GT(f.enrichment->capture_lost, 0u) << "a full ring is counted";
  std::map<uint32_t, std::vector<const perfdata::AttachEntry*>> learned;  // captured or by id
  for (const perfdata::AttachEntry& e : f.attach->entries) {
    if (e.source == perfdata::AttachEntry::kCaptured || e.source == perfdata::AttachEntry::kById) {
      learned[e.link_id].push_back(&e);
    }
  }
  for (size_t i = 0; i < kept.size(); i++) {
    const TestLink& l = kept[i];
    SCOPED_TRACE("link " + std::to_string(i) + " (id " + std::to_string(l.id) + ") " + l.point());
    ASSERT_EQ(learned[l.id].size(), 1u) << "open link not named once by the capture or by id";
    const perfdata::AttachEntry& e = *learned[l.id].front();
    EXPECT_EQ(e.point, l.point());
    EXPECT_EQ(e.prog_id, prog_id(l.raw_tp ? raw_prog.get() : pe_prog.get()));
    // Past the ring's room every record missed: the raw_tp links were
    // queried by id, not named by the capture.
    if (!l.raw_tp || i >= fit) {
      EXPECT_EQ(e.source, perfdata::AttachEntry::kById);
    }
  }
  size_t brief_named = 0;
  for (uint32_t id : brief) {
    for (const perfdata::AttachEntry* e : learned[id]) {
      EXPECT_EQ(e->point, "perf_event");
      brief_named++;
    }
  }
  EXPECT_GE(f.attach->links_lost + brief_named, brief.size())
      << brief_named << " named by id, " << f.attach->links_lost << " counted lost";
}

}  // namespace
}  // namespace bpfprof::capture
