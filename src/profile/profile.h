// SPDX-License-Identifier: Apache-2.0
// Profile: the aggregation model of a report. Frames (symbol, dso, kind, BPF
// program) and stacks (leaf first) are interned; samples are counted by
// (stack, pid, tid, comm). Memory grows with the number of distinct frames,
// stacks and threads, never with the number of samples. Pass 2 fills one
// Profile per worker thread and merges them at the end.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/diagnostics.h"
#include "base/string_pool.h"
#include "symbols/frame_kind.h"

namespace bpfprof::profile {

using FrameId = uint32_t;
using StackId = uint32_t;
using ChargeId = uint32_t;  // 0 = the sample is charged to no BPF program
using symbols::FrameKind;

// One symbolized code location as reports group it. Strings are views into
// the owning Profile's pool once interned.
struct Frame {
  std::string_view symbol = "[unknown]";
  std::string_view dso = "[unknown]";
  std::string_view line;       // "file:line" for BPF frames with line info, else empty
  FrameKind kind = FrameKind::kUnknown;
  uint32_t bpf_program = 0;    // index into the program table + 1; 0 = not BPF
  uint32_t bpf_function = 0;   // function index inside that program

  bool operator==(const Frame&) const = default;
};

// Who ran the sample, and in which cgroup (its path; empty where the
// report did not ask for it).
struct Thread {
  uint32_t pid = 0, tid = 0;
  std::string_view comm;
  std::string_view cgroup;

  bool operator==(const Thread&) const = default;
};

struct Counts {
  uint64_t samples = 0;
  uint64_t period = 0;

  Counts& operator+=(const Counts& o) {
    samples += o.samples;
    period += o.period;
    return *this;
  }
};

// Which BPF program(s) a sample is charged to, from its kernel callchain
// (analysis/cost.h): its leaf is in the program (self), the chain passes
// through it (callee), or the sample is in the machinery of a hook the
// programs are attached at (dispatch: several programs when they share it).
enum class ChargeKind : uint8_t { kSelf, kCallee, kDispatch };
struct Charge {
  ChargeKind kind = ChargeKind::kSelf;
  std::vector<uint32_t> programs;  // Frame::bpf_program values, ascending

  bool operator==(const Charge&) const = default;
};
struct ChargeHash {
  size_t operator()(const Charge& c) const;
};

// The aggregation key of samples.
struct SampleKey {
  StackId stack = 0;
  Thread thread;
  ChargeId charge = 0;

  bool operator==(const SampleKey&) const = default;
};

struct FrameHash {
  size_t operator()(const Frame& f) const;
};
struct StackHash {
  size_t operator()(const std::vector<FrameId>& s) const;
};
struct SampleKeyHash {
  size_t operator()(const SampleKey& k) const;
};

class Profile {
 public:
  Profile() = default;
  Profile(Profile&&) = default;
  Profile& operator=(Profile&&) = default;
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;

  // Interns a frame (copying its strings once) and returns its id.
  FrameId add_frame(const Frame& frame);
  // Interns a stack of frame ids, leaf first. An empty stack is valid.
  StackId add_stack(const std::vector<FrameId>& leaf_first);
  // Interns a charge; ids start at 1 (0 is "no charge").
  ChargeId add_charge(const Charge& charge);
  // The charge of id (not 0).
  const Charge& charge(ChargeId id) const { return *charges_[id - 1]; }
  // Counts one sample of `period` on `stack` run by `thread`.
  void add_sample(StackId stack, const Thread& thread, uint64_t period, uint64_t time,
                  ChargeId charge = 0) {
    add_to(slot(stack, thread, charge), period, time);
  }
  // The counts of (stack, thread), created at zero (and its comm interned) on
  // first use. The reference stays valid for the Profile's lifetime, also
  // across moves, so callers may cache it.
  Counts& slot(StackId stack, const Thread& thread, ChargeId charge = 0);
  // Counts one sample of `period` at `time` into a slot of this Profile.
  void add_to(Counts& slot, uint64_t period, uint64_t time) {
    const Counts c{1, period};
    slot += c;
    total_ += c;
    if (time != 0) {
      if (first_time_ == 0 || time < first_time_) first_time_ = time;
      if (time > last_time_) last_time_ = time;
    }
  }
  // The diagnostics of the samples counted here, and of the recording they
  // came from (analysis/aggregate.cc counts both where it finds them).
  DiagCounts& diagnostics() { return diagnostics_; }
  const DiagCounts& diagnostics() const { return diagnostics_; }
  // Adds every frame, stack, sample and diagnostic of `other` (ids are remapped).
  void merge(const Profile& other);

  const Frame& frame(FrameId id) const { return *frames_[id]; }
  size_t frame_count() const { return frames_.size(); }
  std::span<const FrameId> stack(StackId id) const { return *stacks_[id]; }
  // The leaf frame of a stack; nullptr for an empty stack.
  const Frame* leaf(StackId id) const;

  const std::unordered_map<SampleKey, Counts, SampleKeyHash>& samples() const { return samples_; }
  const Counts& total() const { return total_; }
  // Earliest and latest sample time (0 when there were none).
  uint64_t first_time() const { return first_time_; }
  uint64_t last_time() const { return last_time_; }

 private:
  StringPool strings_;
  std::unordered_map<Frame, FrameId, FrameHash> frame_index_;
  std::vector<const Frame*> frames_;  // keys of frame_index_ (node-stable)
  std::unordered_map<std::vector<FrameId>, StackId, StackHash> stack_index_;
  std::vector<const std::vector<FrameId>*> stacks_;  // keys of stack_index_
  std::unordered_map<Charge, ChargeId, ChargeHash> charge_index_;
  std::vector<const Charge*> charges_;  // keys of charge_index_, id - 1
  std::unordered_map<SampleKey, Counts, SampleKeyHash> samples_;
  Counts total_;
  uint64_t first_time_ = 0, last_time_ = 0;
  DiagCounts diagnostics_;
};

}  // namespace bpfprof::profile
