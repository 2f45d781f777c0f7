// SPDX-License-Identifier: Apache-2.0
// What a BPF program costs: each sample charged, from its kernel callchain,
// to the program whose code it is in (self), to the innermost program its
// chain passes through (callee: helpers, maps, kfuncs), or to the programs
// attached at the hook whose machinery it is in (dispatch). The machinery is
// the table kDispatchFrames below; docs/cost.md lists the same table for
// users (a test checks they agree).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/sample_frames.h"
#include "perfdata/features.h"
#include "profile/profile.h"
#include "symbols/symbolizer.h"

namespace bpfprof::analysis {

// One kind of frame of the kernel code that runs BPF programs at a hook.
struct DispatchFrame {
  // A kernel symbol name; a trailing '*' matches any rest of the name.
  std::string_view pattern;
  // The hook as docs/cost.md names it.
  std::string_view hook;
  // The attach points (as section 254 writes them) of the programs this
  // code runs: space-separated prefixes; a program qualifies when one of its
  // points starts with one of them.
  std::string_view points;
  // The rest of the name after the '*' is the tracepoint's name: the point
  // must also end with "/" + it.
  bool named = false;
  // Only the frame's own code (the sample's leaf) is the hook's: what it
  // calls belongs to other subsystems.
  bool leaf_only = false;
  // Why it belongs here.
  std::string_view why;
  // The hook runs a program for the task that asked (BPF_PROG_TEST_RUN), so
  // that task's process holds it: of the qualifying programs, those owned by
  // the sample's process, where there are any.
  bool run_by_owner = false;
};

// In match order: the first entry whose pattern matches a name is its entry.
extern const std::span<const DispatchFrame> kDispatchFrames;

// The entry of a kernel symbol name, or nullptr.
const DispatchFrame* dispatch_frame(std::string_view symbol);

// What one sample's charge came to.
enum class CostOutcome : uint8_t {
  kNone,          // no program frame and no hook machinery in the chain
  kCharged,       // `charge` says to whom
  kUnattributed,  // hook machinery, but no program known attached there then
  kUnproven,      // a bad frame (address 0, a dead program's range) or a cut
                  // chain before anything that proves a charge
};

// Programs whose points qualify for a window of hook frames, before the time
// check; per worker (the key is the window's entries and names).
using CostCache = std::unordered_map<std::string, std::vector<uint32_t>>;

// The recording's programs with their attach points and lifetimes, built
// once per report.
class CostModel {
 public:
  CostModel(const symbols::Symbolizer& sym, const perfdata::Features& features);

  // Charges the sample whose frames (leaf first: symbolize_for_charge's, or
  // symbolize_sample's with the whole chain) are `frames`; `truncated` when the kernel cut
  // the chain. Only the kernel part is read. `holds` is narrowed to the times
  // for which the programs alive at the hook stay the same.
  CostOutcome classify(std::span<const SymbolizedFrame> frames, bool truncated, uint32_t pid,
                       uint64_t time, CostCache& cache, profile::Charge& charge,
                       symbols::Symbolizer::Holds* holds) const;

 private:
  struct Program {
    std::vector<std::string> points;
    std::vector<uint32_t> owner_pids;  // program_owner's
    uint64_t load_time = 0;
    uint64_t unload_time = UINT64_MAX;
  };
  std::vector<Program> programs_;  // index = Frame::bpf_program - 1
};

// The frames of `sample` that decide its charge, symbolized (leaf first):
// its kernel part, up to the first frame of a BPF program or outside the
// kernel, where classify stops. The user part is not looked up (no program
// runs there; with a deep user stack it is most of a chain's lookups).
// `holds` as symbolize_sample's.
void symbolize_for_charge(const symbols::Symbolizer& sym, const perf::Sample& sample,
                          uint16_t cpumode, std::vector<SymbolizedFrame>& out,
                          symbols::Symbolizer::Holds* holds = nullptr);

// Charges summed per program (index = Frame::bpf_program - 1): callees and
// dispatch as charged, and the dispatch of hooks several programs share
// split by each one's self + callees once every sample is in (finish).
struct CostTally {
  explicit CostTally(size_t programs)
      : self(programs), callees(programs), dispatch(programs), estimated(programs) {}
  // `n` samples charged as `c` (self is counted by the caller from leaves).
  void add(const profile::Charge& c, uint64_t n);
  // Splits the shared dispatch; call once.
  void finish();
  uint64_t total(size_t i) const { return self[i] + callees[i] + dispatch[i]; }

  std::vector<uint64_t> self, callees, dispatch;
  std::vector<bool> estimated;

 private:
  std::map<std::vector<uint32_t>, uint64_t> shared_;
};

// Whether a kernel callchain may have been cut: perf stops at
// perf_event_max_stack entries (127 unless the sysctl was raised) and such a
// chain ends in kernel code.
bool chain_truncated(const perf::Sample& sample);

}  // namespace bpfprof::analysis
