// SPDX-License-Identifier: Apache-2.0
// What kernel tests read back from a recording: the BPF lifecycle records
// (KSYMBOL, BPF_EVENT) and samples, taken from the file alone, and the
// workload's ground truth.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bpf/prog_info.h"
#include "perfdata/reader.h"

namespace bpfprof::testing {

struct KsymbolEvent {
  uint64_t time = 0;
  uint64_t addr = 0;
  uint32_t len = 0;
  uint16_t type = 0;
  bool unregister = false;
  std::string name;
};

struct BpfLifecycleEvent {
  uint64_t time = 0;
  uint16_t type = 0;  // 1 load, 2 unload
  uint32_t id = 0;
  std::string tag;    // 16 hex digits
};

struct SampleEvent {
  uint64_t time = 0;
  uint64_t ip = 0;
  uint32_t pid = 0, tid = 0;
};

struct Recording {
  std::vector<KsymbolEvent> ksymbols;
  std::vector<BpfLifecycleEvent> bpf_events;
  std::vector<SampleEvent> samples;
  std::map<uint32_t, bpf::ProgInfo> prog_info;  // BPF_PROG_INFO by id
  std::map<uint32_t, size_t> btf_sizes;         // BPF_BTF by id
  size_t records = 0;
  size_t synthesized_mmaps = 0;  // MMAP/MMAP2 with time 0
};

// Reads `path` with perfdata::FileReader; fails the calling test on error.
Recording read_recording(const std::string& path);

// One program of a workload truth file.
struct TruthFunction {
  std::string ksym;
  uint64_t addr = 0;
  uint32_t len = 0;
};
struct TruthProgram {
  uint32_t id = 0;
  std::string name, tag, kind;
  uint64_t load_ns = 0, unload_ns = 0;
  uint32_t load_tid = 0;          // the thread that loaded it
  uint64_t load_duration_ns = 0;  // how long the load call took (KSYMBOL comes inside it)
  std::vector<TruthFunction> functions;
};
std::vector<TruthProgram> read_truth(const std::string& path);

}  // namespace bpfprof::testing
