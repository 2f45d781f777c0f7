// SPDX-License-Identifier: Apache-2.0
// Dynamic kernel code from KSYMBOL and BPF_EVENT records, applied in time
// order into an IntervalTimeline that keeps every registration's lifetime, so
// the same JIT address can name different programs at different times. Also
// builds the list of program instances (one per PROG_LOAD or synthesized
// load) with their functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/string_pool.h"
#include "perfdata/features.h"
#include "symbols/interval_timeline.h"
#include "symbols/symbolizer.h"

namespace bpfprof::symbols {

// What one KSYMBOL registration names.
struct KsymPayload {
  std::string_view name;
  FrameKind kind = FrameKind::kBpf;
  uint32_t program = 0;   // index into programs() + 1, once a PROG_LOAD claims it
  uint32_t function = 0;  // function index inside that program
};

class BpfSymbols {
 public:
  using Timeline = IntervalTimeline<KsymPayload>;

  // `features` and `pool` must outlive this object.
  BpfSymbols(const perfdata::Features& features, StringPool& pool, DiagCounts& diag);

  // Pass 1, in time order. `name` must be interned in the pool.
  void on_ksymbol(uint64_t time, uint32_t cpu, uint64_t addr, uint32_t len, uint16_t ksym_type,
                  bool unregister, std::string_view name);
  // `pid`/`tid`: the task the record names (the loader of a PROG_LOAD), 0 if none.
  void on_bpf_event(uint64_t time, uint32_t cpu, uint16_t type, uint32_t id, const bpf::Tag& tag,
                    uint32_t pid = 0, uint32_t tid = 0);
  void finish() { timeline_.build(); }
  // After finish(): each program's metadata from the first of its
  // functions' names `by_name` holds (BPF_METADATA records), then the
  // variables its BPF_PROG_INFO entry has that those lack (section 248).
  using Metadata = bpf::Metadata;
  void attach_metadata(const std::unordered_map<std::string, Metadata>& by_name);

  // Pass 2.
  Timeline::Hit find(uint64_t addr, uint64_t time) const { return timeline_.find(addr, time); }
  const Timeline::Entry& entry(uint32_t i) const { return timeline_.entry(i); }
  const std::vector<BpfProgram>& programs() const { return programs_; }

 private:
  struct Pending {
    uint32_t entry;
    uint32_t cpu;
  };
  void unregister_at(uint64_t time, uint64_t addr);
  void claim(uint32_t entry, uint32_t program, uint32_t function);
  void load(uint64_t time, uint32_t cpu, uint32_t id, const bpf::Tag& tag);
  void unload(uint64_t time, uint32_t id);

  const perfdata::Features& features_;
  StringPool& pool_;
  DiagCounts& diag_;
  Timeline timeline_;
  std::unordered_map<uint64_t, uint32_t> open_by_addr_;   // registered now: addr -> entry
  std::vector<Pending> pending_;                          // program ksyms not yet claimed
  std::unordered_map<uint32_t, uint32_t> loaded_by_id_;   // prog id -> program index
  std::unordered_map<uint32_t, const bpf::ProgInfo*> info_by_id_;
  std::vector<BpfProgram> programs_;
  std::vector<std::vector<uint32_t>> program_entries_;    // timeline entries per program
};

// "bpf_prog_<16 hex>_<name>" -> "<name>"; other names unchanged.
std::string_view program_name_from_ksym(std::string_view ksym);
bool is_bpf_image_name(std::string_view name);

}  // namespace bpfprof::symbols
