// SPDX-License-Identifier: Apache-2.0
// Shared by the fuzz targets: the sample layouts records are parsed under, and
// "run every parser on this record" so each target reaches all of them.
#pragma once

#include <cstdint>
#include <vector>

#include "perf/records.h"

namespace bpfprof::fuzz {

// A handful of layouts that move every field around: bpfprof's own, perf's
// default with callchains, no sample_id_all, and one with every variable part.
inline std::vector<perf::SampleLayout> layouts() {
  const uint64_t base = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
                        PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
  std::vector<perf_event_attr> attrs(4);
  attrs[0].sample_type = base;
  attrs[0].sample_id_all = 1;
  attrs[1].sample_type = base | PERF_SAMPLE_CALLCHAIN;
  attrs[1].sample_id_all = 1;
  attrs[2].sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_ID;
  attrs[3].sample_type = base | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |
                         PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW |
                         PERF_SAMPLE_BRANCH_STACK | PERF_SAMPLE_REGS_USER |
                         PERF_SAMPLE_STACK_USER | PERF_SAMPLE_WEIGHT | PERF_SAMPLE_DATA_SRC |
                         PERF_SAMPLE_TRANSACTION | PERF_SAMPLE_REGS_INTR |
                         PERF_SAMPLE_PHYS_ADDR | PERF_SAMPLE_CGROUP | PERF_SAMPLE_AUX;
  attrs[3].read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED |
                         PERF_FORMAT_LOST;
  attrs[3].sample_regs_user = 0xff;
  attrs[3].sample_regs_intr = 0x3;
  attrs[3].branch_sample_type = PERF_SAMPLE_BRANCH_HW_INDEX;
  attrs[3].sample_id_all = 1;
  std::vector<perf::SampleLayout> out;
  for (const perf_event_attr& a : attrs) {
    auto l = perf::SampleLayout::from_attr(a);
    if (l.ok()) out.push_back(*l);
  }
  return out;
}

// Folds parsed values into a sink the optimizer cannot drop.
inline void keep(uint64_t v) {
  static volatile uint64_t sink;
  sink = sink + v;
}

// Every parser that applies to `r` (and the ones that do not, which must
// refuse cleanly), plus the layout's quick time/id reads.
inline void parse_all(const perf::RecordView& r, const perf::SampleLayout& l) {
  keep(l.time_of(r).value_or(0) + l.id_of(r).value_or(0));
  keep(perf::trailer_offset(r, l.id_hdr_size()).value_or(0));
  if (auto s = perf::parse_sample_id(r, l); s.ok()) keep(s->time);
  if (auto s = perf::Sample::parse(r, l); s.ok()) {
    for (size_t i = 0; i < s->callchain.size(); ++i) keep(s->callchain[i]);
    keep(s->raw.size());
  }
  if (auto m = perf::Mmap::parse(r, l); m.ok()) keep(m->filename.size());
  if (auto m = perf::Mmap2::parse(r, l); m.ok()) keep(m->filename.size() + m->build_id.size());
  if (auto m = perf::Comm::parse(r, l); m.ok()) keep(m->comm.size());
  if (auto m = perf::ForkExit::parse(r, l); m.ok()) keep(m->time);
  if (auto m = perf::Lost::parse(r, l); m.ok()) keep(m->lost);
  if (auto m = perf::LostSamples::parse(r, l); m.ok()) keep(m->lost);
  if (auto m = perf::Throttle::parse(r, l); m.ok()) keep(m->time);
  if (auto m = perf::Ksymbol::parse(r, l); m.ok()) keep(m->name.size() + m->stale_bytes);
  if (auto m = perf::BpfEvent::parse(r, l); m.ok()) keep(m->id + m->stale_bytes);
  if (auto m = perf::BpfMetadata::parse(r); m.ok()) keep(m->prog_name.size() + m->entries.size());
}

}  // namespace bpfprof::fuzz
