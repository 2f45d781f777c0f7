// SPDX-License-Identifier: Apache-2.0
// Pass 2 remembers what it made of a sample (its count slot and diagnostics)
// for the next sample with the same pid, tid, cgroup and addresses, for as
// long as every lookup's answer holds. Here one thread samples the same leaf
// and callchain again and again while the program at the leaf's address is
// unloaded and another loaded there, the thread is renamed and its user
// mapping replaced: each sample must be counted by what was alive at its own
// time, and every frame it has counted in the diagnostics.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "analysis/aggregate.h"
#include "analysis/session.h"
#include "testing/perfdata_fixtures.h"
#include "testing/subprocess.h"

namespace bpfprof::analysis {
namespace {

using bpfprof::testing::SampleValues;
using bpfprof::testing::TrailerValues;

constexpr uint64_t kSampleType = testing::kSampleType | PERF_SAMPLE_CALLCHAIN;
constexpr uint64_t kAddr = 0xffffffffc0004000, kIp = kAddr + 0x24;
constexpr uint64_t kKernelIp = 0xffffffff81000100;  // no kallsyms snapshot: unnamed
constexpr uint64_t kUserIp = 0x400100;
constexpr uint32_t kPid = 5, kOtherTid = 6;

// Samples at t = 201, 301, ... 1401 on tid 5 and, at the same times + 50, on
// tid 6 (same process, same addresses). Program a holds kAddr from 100 to
// 500, b from 800; the process is "first" until 1000, then "second" (tid 6
// is "other" throughout); its page at 0x400000 is "//anon" until 1200, then
// "[heap]".
std::string write_recording(const std::string& path) {
  auto w = perfdata::FileWriter::create(path, testing::two_attrs(kSampleType));
  if (!w.ok()) return w.error().to_string();
  auto side = [](uint64_t time) { return TrailerValues{kPid, kPid, time, testing::kDummyId, 0, 0}; };
  using bpfprof::testing::comm_record;
  using bpfprof::testing::ksymbol_record;
  using bpfprof::testing::mmap2_record;
  auto ksym = [&](uint64_t time, const std::string& name, bool unregister) {
    return w->append(ksymbol_record(kSampleType, kAddr, 0x100, perf::kKsymTypeBpf,
                                    unregister ? perf::kKsymFlagUnregister : 0, name, side(time)))
        .ok();
  };
  auto page = [&](uint64_t time, std::string_view file) {
    testing::Mmap2Values m;
    m.pid = m.tid = kPid;
    m.start = 0x400000;
    m.len = 0x1000;
    m.filename = file;
    return w->append(mmap2_record(kSampleType, m, side(time))).ok();
  };
  auto comm = [&](uint64_t time, uint32_t tid, std::string_view name) {
    return w->append(comm_record(kSampleType, kPid, tid, name, side(time))).ok();
  };
  if (!ksym(100, "bpf_prog_aaaaaaaaaaaaaaaa_first", false) || !comm(100, kPid, "first") ||
      !comm(100, kOtherTid, "other") || !page(100, "//anon")) {
    return "append";
  }
  for (uint64_t t = 200; t < 1500; t += 100) {
    bool ok = true;
    if (t == 500) ok = ksym(t, "bpf_prog_aaaaaaaaaaaaaaaa_first", true);
    if (t == 800) ok = ksym(t, "bpf_prog_bbbbbbbbbbbbbbbb_second", false);
    if (t == 1000) ok = comm(t, kPid, "second");
    if (t == 1200) ok = page(t, "[heap]");
    if (!ok) return "append";
    for (const uint32_t tid : {kPid, kOtherTid}) {
      SampleValues v;
      v.id = testing::kSampleId;
      v.ip = kIp;
      v.pid = kPid;
      v.tid = tid;
      v.time = t + (tid == kPid ? 1 : 50);
      v.period = 10;
      v.callchain = {perf::kContextKernel, kIp, kKernelIp, perf::kContextUser, kUserIp};
      if (!w->append(bpfprof::testing::sample_record(kSampleType, v, perf::kMiscKernel)).ok()) {
        return "append";
      }
    }
  }
  Status closed = w->close(perfdata::Features{});
  return closed.ok() ? "" : closed.error().to_string();
}

// "leaf symbol | comm" (flat) or "leaf symbol < kernel caller dso < user
// dso | comm" (-g) -> samples.
std::map<std::string, uint64_t> counts_of(const ReportData& d) {
  std::map<std::string, uint64_t> out;
  const profile::Profile& p = d.profile;
  for (const auto& [key, counts] : p.samples()) {
    std::string name;
    for (const profile::FrameId f : p.stack(key.stack)) {
      if (!name.empty()) name += " < ";
      name += name.empty() ? std::string(p.frame(f).symbol) : std::string(p.frame(f).dso);
    }
    out[name + " | " + std::string(key.thread.comm)] += counts.samples;
  }
  return out;
}

TEST(SampleMemoTest, RepeatedSamplesAreCountedByWhatWasAliveAtTheirTime) {
  bpfprof::testing::TempDir dir;
  const std::string path = dir.file("repeats.data");
  ASSERT_EQ(write_recording(path), "");
  auto session = Session::open(path, SessionOptions{});
  ASSERT_TRUE(session.ok()) << session.error().to_string();
  const std::string a = "bpf_prog_aaaaaaaaaaaaaaaa_first", b = "bpf_prog_bbbbbbbbbbbbbbbb_second";
  for (const unsigned threads : {1u, 2u}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    AggregateOptions flat;
    flat.threads = threads;
    const ReportData f = aggregate(**session, flat);
    const std::map<std::string, uint64_t> want_flat = {
        {a + " | first", 3},       {a + " | other", 3},         {"[unknown] | first", 3},
        {"[unknown] | other", 3},  {b + " | first", 2},         {b + " | other", 7},
        {b + " | second", 5},
    };
    EXPECT_EQ(counts_of(f), want_flat);
    EXPECT_EQ(f.profile.diagnostics()[Diag::kBpfSamplesUnattributed], 6u);
    EXPECT_EQ(f.profile.diagnostics()[Diag::kUnknownFramesBpfNotAlive], 6u);
    EXPECT_EQ(f.profile.diagnostics()[Diag::kUnknownFramesNoKallsyms], 0u);
    EXPECT_EQ(f.profile.total().period, 26u * 10);

    AggregateOptions g = flat;
    g.stacks = true;
    const ReportData s = aggregate(**session, g);
    const std::string k = " < [kernel.kallsyms] < ";
    const std::map<std::string, uint64_t> want_g = {
        {a + k + "//anon | first", 3},      {a + k + "//anon | other", 3},
        {"[unknown]" + k + "//anon | first", 3}, {"[unknown]" + k + "//anon | other", 3},
        {b + k + "//anon | first", 2},      {b + k + "//anon | other", 4},
        {b + k + "[heap] | other", 3},      {b + k + "//anon | second", 2},
        {b + k + "[heap] | second", 3},
    };
    EXPECT_EQ(counts_of(s), want_g);
    EXPECT_EQ(s.profile.diagnostics()[Diag::kBpfSamplesUnattributed], 6u);
    EXPECT_EQ(s.profile.diagnostics()[Diag::kUnknownFramesBpfNotAlive], 6u);
    EXPECT_EQ(s.profile.diagnostics()[Diag::kUnknownFramesNoKallsyms], 26u);
    EXPECT_EQ(s.profile.diagnostics()[Diag::kUnknownFramesNoFile], 26u);
  }
}

}  // namespace
}  // namespace bpfprof::analysis
