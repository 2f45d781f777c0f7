// SPDX-License-Identifier: Apache-2.0
// A small hand-built report (one BPF program with two functions, a kernel
// caller, a user leaf, a sample without frames), shared by the tests of the
// outputs that read whole reports (pprof, merge).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "analysis/report_data.h"

namespace bpfprof::testing {

inline constexpr uint64_t kBurnAddr = 0xffffffffc0001000, kSubAddr = 0xffffffffc0001400;

// One BPF program (two functions, JIT'd at known addresses), a kernel
// caller, a user leaf, one sample without frames; 11 samples of period 100.
inline analysis::ReportData make_report(uint32_t prog_id, std::string host) {
  using namespace analysis;
  using profile::FrameKind;
  ReportData d;
  d.header.host = std::move(host);
  d.header.kernel = "6.1.0";
  d.header.events = {"cpu-clock", "dummy:u"};
  d.header.start_ns = 1'000'000'000;
  d.header.end_ns = 1'500'000'000;
  d.programs.push_back(ProgramRow{prog_id, "burn", "0011223344556677", 0, std::nullopt, 6,
                                  {{"bpf_prog_0011223344556677_burn", 4, kBurnAddr, 0x100},
                                   {"bpf_prog_0011223344556677_sub", 2, kSubAddr, 0x80}}});
  auto& p = d.profile;
  auto burn = p.add_frame({"bpf_prog_0011223344556677_burn", "[bpf]", "burn.bpf.c:12",
                           FrameKind::kBpf, 1, 0});
  auto sub = p.add_frame({"bpf_prog_0011223344556677_sub", "[bpf]", "", FrameKind::kBpf, 1, 1});
  auto run = p.add_frame({"bpf_test_run", "[kernel.kallsyms]", "", FrameKind::kKernel});
  auto main = p.add_frame({"main", "/usr/bin/w", "", FrameKind::kUser});
  for (int i = 0; i < 4; i++) p.add_sample(p.add_stack({burn, run, main}), {5, 5, "w"}, 100, 1);
  for (int i = 0; i < 2; i++) p.add_sample(p.add_stack({sub, burn, run}), {5, 6, "w"}, 100, 1);
  for (int i = 0; i < 4; i++) p.add_sample(p.add_stack({main}), {5, 5, "w"}, 100, 1);
  p.add_sample(p.add_stack({}), {0, 0, "swapper"}, 100, 1);
  return d;
}

}  // namespace bpfprof::testing
