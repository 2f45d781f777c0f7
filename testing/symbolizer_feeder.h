// SPDX-License-Identifier: Apache-2.0
// Test-only: feeds records built with testing/record_builder.h into a
// Symbolizer with one fixed layout (TID, TIME, CPU in the sample_id trailer).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string_view>

#include "perf/records.h"
#include "symbols/symbolizer.h"
#include "testing/record_builder.h"

namespace bpfprof::testing {

class Feeder {
 public:
  static constexpr uint64_t kSampleType = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;

  explicit Feeder(symbols::Symbolizer& s) : s_(s) {
    perf_event_attr a{};
    a.sample_type = kSampleType;
    a.sample_id_all = 1;
    auto l = perf::SampleLayout::from_attr(a);
    EXPECT_TRUE(l.ok());
    if (l.ok()) layout_ = *l;
  }
  void feed(const ByteVec& rec) {
    auto r = perf::record_at(rec, 0);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    s_.add_sideband(*r, layout_);
  }
  static TrailerValues at(uint64_t time, uint32_t cpu = 0) {
    TrailerValues t;
    t.time = time;
    t.cpu = cpu;
    return t;
  }
  void ksym(uint64_t time, uint64_t addr, uint32_t len, std::string_view name, bool unregister = false,
            uint32_t cpu = 0, uint16_t type = perf::kKsymTypeBpf) {
    feed(ksymbol_record(kSampleType, addr, len, type,
                                          unregister ? perf::kKsymFlagUnregister : 0, name, at(time, cpu)));
  }
  void bpf(uint64_t time, uint16_t type, uint32_t id, const bpf::Tag& tag, uint32_t cpu = 0) {
    uint8_t t[perf::kBpfTagSize];
    std::memcpy(t, tag.data(), sizeof t);
    feed(bpf_event_record(kSampleType, type, 0, id, t, at(time, cpu)));
  }
  void load(uint64_t time, uint32_t id, const bpf::Tag& tag, uint32_t cpu = 0) {
    bpf(time, perf::kBpfEventProgLoad, id, tag, cpu);
  }
  void unload(uint64_t time, uint32_t id, const bpf::Tag& tag) {
    bpf(time, perf::kBpfEventProgUnload, id, tag);
  }
  void mmap2(uint64_t time, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
             std::string_view file) {
    Mmap2Values m;
    m.pid = m.tid = pid;
    m.start = start;
    m.len = len;
    m.pgoff = pgoff;
    m.prot = 5;  // PROT_READ | PROT_EXEC
    m.filename = file;
    feed(mmap2_record(kSampleType, m, at(time)));
  }
  void comm(uint64_t time, uint32_t pid, uint32_t tid, std::string_view name, bool exec = false) {
    feed(comm_record(kSampleType, pid, tid, name, at(time),
                                       exec ? perf::kMiscCommExec : 0));
  }
  void fork(uint64_t time, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid,
            uint16_t misc = 0) {
    feed(fork_exit_record(kSampleType, false, pid, ppid, tid, ptid, time, at(time), misc));
  }
  const perf::SampleLayout& layout() const { return layout_; }

 private:
  symbols::Symbolizer& s_;
  perf::SampleLayout layout_;
};

inline bpf::Tag tag_of(uint8_t b) {
  bpf::Tag t;
  t.fill(b);
  return t;
}

}  // namespace bpfprof::testing
