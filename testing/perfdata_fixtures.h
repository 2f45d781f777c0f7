// SPDX-License-Identifier: Apache-2.0
// Test-only fixtures of the perfdata tests: the two attrs bpfprof records with
// (cpu-clock sampling + dummy side-band), and a BPF program with two functions.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "bpf/prog_info.h"
#include "perfdata/writer.h"
#include "testing/record_builder.h"

namespace bpfprof::testing {

inline constexpr uint64_t kSampleType = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP |
                                        PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                                        PERF_SAMPLE_PERIOD;
inline constexpr uint64_t kSampleId = 101, kDummyId = 201;

inline perf_event_attr make_attr(uint32_t type, uint64_t config,
                                 uint64_t sample_type = kSampleType) {
  perf_event_attr a{};
  a.type = type;
  a.size = perf::kAttrSizeWritten;
  a.config = config;
  a.sample_period = 10000;
  a.sample_type = sample_type;
  a.sample_id_all = 1;
  return a;
}

// cpu-clock sampling (ids 101, 102) and a dummy side-band event (ids 201, 202).
inline std::vector<perfdata::AttrEntry> two_attrs(uint64_t sample_type = kSampleType) {
  perfdata::AttrEntry clock{make_attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, sample_type), "cpu-clock",
                  {kSampleId, kSampleId + 1}};
  perf_event_attr d = make_attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY, sample_type);
  d.sample_period = 1;
  d.mmap = d.comm = d.task = d.mmap2 = d.comm_exec = d.ksymbol = d.bpf_event = 1;
  perfdata::AttrEntry dummy{d, "dummy:u", {kDummyId, kDummyId + 1}};
  return {clock, dummy};
}

// A program with two functions, func info, line info and jited line info.
inline bpf::ProgInfo demo_prog(uint32_t id, uint64_t addr) {
  bpf::ProgInfo p;
  p.info.type = BPF_PROG_TYPE_SOCKET_FILTER;
  p.info.id = id;
  const uint8_t tag[8] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};
  std::memcpy(p.info.tag, tag, 8);
  std::strncpy(p.info.name, "demo", sizeof p.info.name);
  p.info.btf_id = 7;
  p.info.run_cnt = 12345;
  p.info.xlated_prog_len = 96;
  p.jited_insns = {0x55, 0x48, 0x89, 0xe5, 0xc3, 0x90, 0xcc};  // 7 bytes: tests padding
  p.jited_ksyms = {addr, addr + 0x80};
  p.jited_func_lens = {0x80, 0x80};
  p.info.func_info_rec_size = sizeof(bpf_func_info);
  for (uint32_t i = 0; i < 2; ++i) {
    bpf_func_info fi{i * 4, 10 + i};
    append_pod(p.func_info, fi);
  }
  p.info.line_info_rec_size = sizeof(bpf_line_info);
  for (uint32_t i = 0; i < 3; ++i) {
    bpf_line_info li{i * 2, 100, 200 + i, (10 + i) << 10 | 5};
    append_pod(p.line_info, li);
  }
  p.jited_line_info = {addr, addr + 0x10, addr + 0x80};
  bpf::Tag t1, t2;
  std::memcpy(t1.data(), tag, 8);
  t2 = t1;
  t2[7] = 0xee;
  p.prog_tags = {t1, t2};
  return p;
}

}  // namespace bpfprof::testing
