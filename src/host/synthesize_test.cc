// SPDX-License-Identifier: Apache-2.0
#include "host/synthesize.h"

#include <sys/stat.h>

#include <cstdio>
#include <set>

#include <gtest/gtest.h>

#include "host/synth_records.h"
#include "perf/event_open.h"
#include "perf/records.h"
#include "testing/record_builder.h"
#include "testing/subprocess.h"

namespace bpfprof::host {
namespace {

using bpfprof::testing::ByteVec;

perf::SampleLayout layout() {
  perf::SamplingConfig c;
  c.callchain = true;
  auto l = perf::SampleLayout::from_attr(perf::make_sampling_attr(c));
  EXPECT_TRUE(l.ok());
  return *l;
}

std::vector<perf::RecordView> records_of(const std::vector<std::byte>& bytes) {
  std::vector<perf::RecordView> out;
  size_t off = 0;
  while (off < bytes.size()) {
    auto r = perf::record_at(bytes, off);
    EXPECT_TRUE(r.ok());
    if (!r.ok()) break;
    out.push_back(*r);
    off += r->header.size;
  }
  return out;
}

ByteVec prog_event(uint64_t sample_type, uint16_t type, uint32_t id) {
  const uint8_t tag[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  return testing::bpf_event_record(sample_type, type, 0, id, tag, {.time = 100 + id});
}

TEST(SynthesizeTest, CollectsProgLoadIdsAcrossTheWrap) {
  const uint64_t st = layout().sample_type();
  ByteVec bytes = testing::concat({
      testing::ksymbol_record(st, 0xffffffffc0000000, 64, perf::kKsymTypeBpf, 0, "bpf_prog_x"),
      prog_event(st, perf::kBpfEventProgLoad, 7),
      prog_event(st, perf::kBpfEventProgUnload, 8),
      prog_event(st, perf::kBpfEventProgLoad, 9),
  });
  // Split in the middle of the last record, as a ring wrap would.
  const size_t split = bytes.size() - 20;
  perf::RingBuffer::Chunk c;
  c.first = Bytes(bytes.data(), split);
  c.second = Bytes(bytes.data() + split, bytes.size() - split);
  std::set<uint32_t> ids;
  collect_prog_load_ids(c, ids);
  EXPECT_EQ(ids, (std::set<uint32_t>{7, 9}));
}

TEST(SynthesizeTest, StopsAtAMalformedHeader) {
  const uint64_t st = layout().sample_type();
  ByteVec bytes = prog_event(st, perf::kBpfEventProgLoad, 3);
  ByteVec bad(16);
  bad[6] = std::byte{4};  // size 4 < 8
  bytes.insert(bytes.end(), bad.begin(), bad.end());
  ByteVec more = prog_event(st, perf::kBpfEventProgLoad, 4);
  bytes.insert(bytes.end(), more.begin(), more.end());
  perf::RingBuffer::Chunk c;
  c.first = bytes;
  std::set<uint32_t> ids;
  collect_prog_load_ids(c, ids);
  EXPECT_EQ(ids, (std::set<uint32_t>{3}));
}

TEST(SynthesizeTest, PlanSkipsProgramsWithALiveLoad) {
  BpfPlan plan = plan_bpf_synthesis({1, 5, 9, 12}, {5, 12, 40});
  EXPECT_EQ(plan.synthesize, (std::vector<uint32_t>{1, 9}));
  EXPECT_EQ(plan.live, (std::vector<uint32_t>{5, 12}));
  BpfPlan none = plan_bpf_synthesis({}, {5});
  EXPECT_TRUE(none.synthesize.empty());
  EXPECT_TRUE(none.live.empty());
}

TEST(SynthesizeTest, RecordsParseBackWithZeroTrailers) {
  const perf::SampleLayout l = layout();
  SynthBuffer b(l.id_hdr_size());
  b.mmap(perf::kMiscKernel, static_cast<uint32_t>(-1), 0, 0xffffffff81000000, 0x1276988,
         0xffffffff81000000, "[kernel.kallsyms]_text");
  b.mmap2(perf::kMiscUser, {.pid = 10, .tid = 10, .start = 0x1000, .len = 0x2000, .pgoff = 0x3000,
                            .maj = 1, .min = 2, .ino = 99, .prot = 5, .flags = 2},
          "/usr/bin/sleep");
  b.comm(10, 11, "a-very-long-thread-name");
  b.fork(10, 1, 11, 10);
  b.ksymbol(0xffffffffc0001000, 72, perf::kKsymTypeBpf, 0, "bpf_prog_0102030405060708_f");
  b.bpf_event(perf::kBpfEventProgLoad, 42, bpf::Tag{1, 2, 3, 4, 5, 6, 7, 8});
  b.header_only(perf::kRecordFinishedInit);
  auto recs = records_of(b.bytes());
  ASSERT_EQ(recs.size(), 7u);
  EXPECT_EQ(b.records(), 7u);
  for (size_t i = 0; i + 1 < recs.size(); i++) {
    EXPECT_EQ(recs[i].header.size % 8, 0u);
    EXPECT_EQ(l.time_of(recs[i]).value_or(1), 0u) << "record " << i;
    EXPECT_EQ(l.id_of(recs[i]).value_or(1), 0u) << "record " << i;
  }
  auto mmap = perf::Mmap::parse(recs[0], l);
  ASSERT_TRUE(mmap.ok()) << mmap.error().to_string();
  EXPECT_EQ(mmap->pid, static_cast<uint32_t>(-1));
  EXPECT_EQ(mmap->filename, "[kernel.kallsyms]_text");
  EXPECT_EQ(recs[0].cpumode(), perf::kMiscKernel);
  auto mmap2 = perf::Mmap2::parse(recs[1], l);
  ASSERT_TRUE(mmap2.ok()) << mmap2.error().to_string();
  EXPECT_EQ(mmap2->ino, 99u);
  EXPECT_EQ(mmap2->prot, 5u);
  EXPECT_EQ(mmap2->filename, "/usr/bin/sleep");
  auto comm = perf::Comm::parse(recs[2], l);
  ASSERT_TRUE(comm.ok());
  EXPECT_EQ(comm->comm, "a-very-long-thr");  // TASK_COMM_LEN - 1
  auto fork = perf::ForkExit::parse(recs[3], l);
  ASSERT_TRUE(fork.ok());
  EXPECT_EQ(recs[3].header.misc, perf::kMiscForkExec);
  EXPECT_EQ(fork->ptid, 10u);
  auto ksym = perf::Ksymbol::parse(recs[4], l);
  ASSERT_TRUE(ksym.ok());
  EXPECT_EQ(ksym->name, "bpf_prog_0102030405060708_f");
  EXPECT_EQ(ksym->len, 72u);
  auto ev = perf::BpfEvent::parse(recs[5], l);
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->id, 42u);
  EXPECT_EQ(ev->tag[7], 8);
  EXPECT_EQ(recs[6].header.type, perf::kRecordFinishedInit);
  EXPECT_EQ(recs[6].header.size, 8u);
}

}  // namespace
}  // namespace bpfprof::host

namespace bpfprof::host {
namespace {

TEST(SynthesizeCgroupsTest, FindsTheCgroup2MountInMountinfo) {
  const std::string text =
      "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
      "31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
      "40 30 0:37 /sub\\040tree /sys/fs/cgroup/uni\\134fied rw,relatime shared:9 - cgroup2 "
      "cgroup2 rw\n";
  auto m = find_cgroup2_mount(text);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->mount_point, "/sys/fs/cgroup/uni\\fied");
  EXPECT_EQ(m->root, "/sub tree");
  EXPECT_FALSE(find_cgroup2_mount(text.substr(0, text.find("40 30"))).has_value());
  EXPECT_FALSE(find_cgroup2_mount("garbage\n- cgroup2 x\n").has_value());
}

// The walk names every directory below the mount, parents first, with
// paths from the hierarchy's root (the mount's root as prefix).
TEST(SynthesizeCgroupsTest, OneRecordPerDirectoryParentsFirst) {
  testing::TempDir dir;
  for (const char* d : {"/b", "/a", "/a/x", "/a/x/deep"}) {
    ASSERT_EQ(::mkdir((dir.path() + d).c_str(), 0755), 0) << d;
  }
  std::FILE* file = std::fopen((dir.path() + "/a/file").c_str(), "w");  // not a cgroup
  ASSERT_NE(file, nullptr);
  std::fclose(file);
  const size_t trailer = layout().id_hdr_size();
  for (const std::string root : {"/", "/k8s/"}) {
    SynthBuffer out(trailer);
    size_t flushes = 0;
    auto n = synthesize_cgroups(out, {dir.path(), root}, [&] {
      flushes++;
      return ok_status();
    });
    ASSERT_TRUE(n.ok()) << n.error().to_string();
    EXPECT_EQ(*n, 5u);
    std::vector<std::string> paths;
    std::set<uint64_t> ids;
    for (const perf::RecordView& r : records_of(out.bytes())) {
      auto c = perf::Cgroup::parse(r, layout());
      ASSERT_TRUE(c.ok()) << c.error().to_string();
      EXPECT_EQ(c->sample_id.time, 0u);
      paths.emplace_back(c->path);
      ids.insert(c->id);
    }
    const std::string p = root == "/" ? "" : "/k8s";
    EXPECT_EQ(paths, (std::vector<std::string>{root == "/" ? "/" : "/k8s", p + "/a", p + "/a/x",
                                               p + "/a/x/deep", p + "/b"}));
    EXPECT_EQ(ids.size(), 5u);
    EXPECT_EQ(ids.count(0), 0u);
  }
  SynthBuffer out(trailer);
  auto gone = synthesize_cgroups(out, {dir.path() + "/none", "/"}, [] { return ok_status(); });
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(*gone, 0u);
}

}  // namespace
}  // namespace bpfprof::host
