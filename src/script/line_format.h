// SPDX-License-Identifier: Apache-2.0
// One line of `bpfprof script` for one sample, text or JSON, and the state a
// formatting thread keeps from line to line to write the next one fast.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/aggregate.h"
#include "analysis/cost.h"
#include "analysis/sample_frames.h"
#include "analysis/session.h"
#include "analysis/time_order.h"
#include "base/prefault.h"
#include "perf/records.h"
#include "script/script.h"
#include "script/text_buffer.h"

namespace bpfprof::script {

// A formatting thread's state from line to line. Consecutive samples mostly
// repeat their thread and second, so the text of those fields is kept.
struct LineScratch {
  std::vector<analysis::SymbolizedFrame> frames;
  perf::Sample parsed;
  // "{comm:>16} {pid:>7}/{tid:<7} [{cpu:03}] " as last written on each CPU
  // (time order interleaves the CPUs), for that pid, tid and cpu, while the
  // thread's comm is the one written: times [comm_from, comm_to).
  struct Thread {
    uint64_t comm_from = 0, comm_to = 0;
    uint32_t pid = 0, tid = 0, cpu = 0;
    size_t size = 0;  // 0: none kept
    char text[64] = {};
  };
  std::array<Thread, 16> threads;
  // "{seconds}." as last written.
  struct {
    uint64_t seconds = UINT64_MAX;
    size_t size = 0;
    char text[24] = {};
  } second;
  // "{ip:16x} {sym}+0x{off} ({dso})\n" of leaves as last written per ip
  // and process (direct-mapped; kernel code, BPF programs among it, is no
  // process's), with the times [from, to) the symbolizer's answer at that
  // ip holds for.
  struct Tail {
    uint64_t ip = 0, from = 0, to = 0;
    uint32_t pid = 0;   // 0 for kernel code
    uint32_t size = 0;  // 0: none kept
    bool kernel = false;
    char text[100];
  };
  static constexpr size_t kTails = 4096;
  std::vector<Tail, PrefaultAllocator<Tail>> tails = decltype(tails)(kTails);
  // "\t{ip:16x} {sym}+0x{off} ({dso})\n" of callchain frames as last
  // written (direct-mapped by address and process), with the times
  // [from, to) the symbolizer's answer for the frame holds for.
  struct FrameText {
    uint64_t ip = 0, lookup = 0, from = 0, to = 0;
    uint32_t pid = 0;   // 0 for kernel code, which no process maps
    uint16_t size = 0;  // 0: none kept
    uint8_t kind = 0;   // user, kernel, unmapped (analysis::FrameRequest)
    char text[213];
  };
  static_assert(sizeof(FrameText) == 256);
  static constexpr size_t kFrameTexts = 4096;
  std::vector<FrameText, PrefaultAllocator<FrameText>> frame_texts =
      decltype(frame_texts)(kFrameTexts);
  // JSON: program owners (with their cgroups) and attach points by program
  // index, made on first use ("" = not yet), from the attach index made on
  // first use.
  struct Owner {
    std::string name, cgroup;
  };
  std::vector<Owner> owners;
  std::vector<std::string> attach;
  std::optional<analysis::AttachIndex> attach_index;
  // JSON: each sample's charge (docs/cost.md) from its whole chain; the
  // model made on first use.
  std::unique_ptr<analysis::CostModel> cost;
  analysis::CostCache cost_cache;
  std::vector<analysis::SymbolizedFrame> chain;
  profile::Charge charge;
  // perf's layout (-F): event names by attr, in the width of the longest.
  std::vector<std::pair<const perf::SampleLayout*, std::string>> events;
  size_t event_width = 0;
  std::string text;  // the sample's text, made here first
};

// Appends the text of the sample `ref` to `out`: its line, or with
// callchains its header line, frames and a blank line.
void format_sample(const analysis::Session& session, const analysis::OrderedSample& ref,
                   const ScriptOptions& options, LineScratch& scratch, TextBuffer& out);

}  // namespace bpfprof::script
