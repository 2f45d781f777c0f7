// SPDX-License-Identifier: Apache-2.0
// Time-correct symbolization from a recording alone: a lookup is
// (pid, address, time), never address alone. Pass 1 feeds side-band records
// (KSYMBOL, BPF_EVENT, MMAP/MMAP2, COMM, FORK, EXIT), which finish() puts in
// time order and applies to timelines; after finish() the Symbolizer is
// immutable and lookups are const and thread-safe, so pass 2 symbolizes
// samples in parallel. Nothing here asks the live kernel: kernel text comes
// from the kallsyms snapshot stored in the file, BPF code from
// KSYMBOL/BPF_EVENT and BPF_PROG_INFO, the vDSO from its image stored in the
// file, user code from MMAP2 maps and ELF files (by build id where the file
// has one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/diagnostics.h"
#include "bpf/prog_info.h"
#include "perf/records.h"
#include "perfdata/features.h"
#include "perfdata/kallsyms_table.h"
#include "symbols/frame_kind.h"

namespace bpfprof::symbols {

// Why a frame has no symbol; counted in diagnostics (unknown_frames_diag).
enum class Unknown : uint8_t {
  kNone,
  kNoKallsyms,      // kernel address but the file has no kallsyms snapshot
  kKernelNoSymbol,  // kernel address outside every known symbol
  kBpfNotAlive,     // inside a BPF range that was not registered at that time
  kNoMap,           // user address in no MMAP of that process at that time
  kNoElf,           // mapped file cannot be opened / is not ELF / build id mismatch
  kNoSymbol,        // ELF has no symbol covering the address
  kNoProcess,       // pid never seen in the stream
  kNoFile,          // mapping without a file to read: [heap], //anon, memfd
  kNoVdso,          // [vdso] code, and the recording holds no readable vDSO image
};
inline constexpr size_t kUnknownCount = static_cast<size_t>(Unknown::kNoVdso) + 1;
// The diagnostic that counts frames unknown for `u` (not kNone). Inline:
// pass 2 counts every unknown frame by it.
constexpr Diag unknown_frames_diag(Unknown u) {
  switch (u) {
    case Unknown::kNone:
    case Unknown::kNoKallsyms: return Diag::kUnknownFramesNoKallsyms;
    case Unknown::kKernelNoSymbol: return Diag::kUnknownFramesKernelNoSymbol;
    case Unknown::kBpfNotAlive: return Diag::kUnknownFramesBpfNotAlive;
    case Unknown::kNoMap: return Diag::kUnknownFramesNoMap;
    case Unknown::kNoElf: return Diag::kUnknownFramesNoElf;
    case Unknown::kNoSymbol: return Diag::kUnknownFramesNoSymbol;
    case Unknown::kNoProcess: return Diag::kUnknownFramesNoProcess;
    case Unknown::kNoFile: return Diag::kUnknownFramesNoFile;
    case Unknown::kNoVdso: return Diag::kUnknownFramesNoVdso;
  }
  return Diag::kUnknownFramesNoKallsyms;
}

// One symbolized address. String views stay valid as long as the Symbolizer.
struct Frame {
  FrameKind kind = FrameKind::kUnknown;
  std::string_view symbol = "[unknown]";
  std::string_view dso = "[unknown]";  // "[kernel.kallsyms]", "[bpf]", module, or path
  uint64_t symbol_start = 0;           // absolute address where the symbol starts
  uint32_t bpf_program = 0;            // index into bpf_programs() + 1; 0 = not BPF
  uint32_t bpf_function = 0;           // function index inside that program
  Unknown unknown = Unknown::kNone;
};

struct BpfFunction {
  std::string ksym;  // the KSYMBOL name
  uint64_t addr = 0;
  uint32_t len = 0;
};

// One BPF program instance as the stream tells it: one PROG_LOAD (or the
// synthesized state at start) until its PROG_UNLOAD.
struct BpfProgram {
  uint32_t id = 0;
  bpf::Tag tag{};
  std::string name;                     // bpf_prog_info name if stored, else from the ksym
  uint64_t load_time = 0;               // 0 = existed before recording started
  std::optional<uint64_t> unload_time;  // none = still loaded at the end
  std::vector<BpfFunction> functions;   // main function first
  const bpf::ProgInfo* info = nullptr;  // BPF_PROG_INFO entry, if stored
  // The task whose BPF_EVENT loaded it (its sample_id); 0 for programs
  // synthesized at start or records without a pid.
  uint32_t loader_pid = 0, loader_tid = 0;
  // Its bpf_metadata_* variables (name without the prefix, value), as a
  // BPF_METADATA record gave them, then those of section 248 the record
  // lacks; empty when neither names it.
  bpf::Metadata metadata;
};

// A BPF source line: from jited line info -> line info -> BTF strings.
struct SourceLine {
  std::string_view file;
  uint32_t line = 0;
  std::string_view text;  // the line's source text as BTF carries it
};

class Symbolizer {
 public:
  // Addresses from here up are kernel code whatever the sample's cpumode.
  static constexpr uint64_t kKernelSpaceStart = 0xffff800000000000ull;

  struct Options {
    std::string symfs;       // prefix for user ELF paths (like perf --symfs)
    bool read_elf = true;    // open user binaries for symbols
    // Kernel symbols the user named (--kallsyms FILE): used instead of the
    // file's snapshot.
    std::optional<perfdata::KallsymsTable> kallsyms;
    bool full_signatures = false;  // C++ names with parameters (demangle.h)
    // A vDSO image the user named (--vdso FILE), for recordings that hold
    // none (perf's); must outlive the Symbolizer. The file's own comes first.
    Bytes vdso;
  };
  // `features` must outlive the Symbolizer: kallsyms names, BPF_PROG_INFO and
  // BTF are used in place.
  Symbolizer(const perfdata::Features& features, Options options);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // The record types add_sideband() uses (KSYMBOL, BPF_EVENT, MMAP, MMAP2,
  // COMM, FORK, EXIT, CGROUP); callers that keep records for it keep these only.
  static bool consumes(uint32_t type);
  // Pass 1: the side-band records, in any order (a recording's file order,
  // or ring after ring): finish() applies them in time order, and this is
  // the one place that decides it. By time (the sample_id time; FORK and
  // EXIT without one by their own time field), records of equal times in the
  // order added; records stamped 0 (the synthesized state before recording
  // began) and records without a time go first, in the order added, each of
  // the latter at the newest time of those first records before it. Records
  // of types not consumed are ignored.
  void add_sideband(const perf::RecordView& r, const perf::SampleLayout& layout);
  // Pass 1: a program's metadata, for the program one of whose functions
  // the record names (by its KSYMBOL name); copied.
  void add_bpf_metadata(const perf::BpfMetadata& m);
  // Ends pass 1: applies the records in time order, builds lookup indexes.
  void finish();

  // Pass 2: const, thread-safe. `kernel` from the sample's cpumode or the
  // callchain context marker (an ip in the kernel half of the address space is
  // looked up as kernel code regardless).
  Frame lookup(uint32_t pid, uint64_t ip, uint64_t time, bool kernel) const;
  // Whether lookup() looks `ip` up as kernel code (no process involved).
  static bool looks_up_kernel(uint64_t ip, bool kernel) { return kernel || ip >= kKernelSpaceStart; }
  // The times [from, to) around a lookup's time for which its answer holds.
  struct Holds {
    uint64_t from = 0, to = 0;
  };
  // lookup() of kernel code, with the times the answer holds for at this ip:
  // a caller may reuse it for the same ip at any time in that range.
  Frame lookup_kernel(uint64_t ip, uint64_t time, Holds& holds) const;
  // lookup() with the times its answer holds for at this (pid, ip).
  Frame lookup(uint32_t pid, uint64_t ip, uint64_t time, bool kernel, Holds& holds) const;
  std::optional<SourceLine> bpf_line(const Frame& frame, uint64_t ip) const;
  // The thread's COMM at `time` (the latest at or before it; the thread's
  // first one if it is older than all; else the process's); empty if unknown.
  std::string_view comm(uint32_t pid, uint32_t tid, uint64_t time) const;
  // The same, with the times the name holds for (the thread's names do not
  // change in between).
  std::string_view comm(uint32_t pid, uint32_t tid, uint64_t time, Holds& holds) const;

  // The path a CGROUP record gave cgroup `id` (the cgroup v2 id a sample's
  // PERF_SAMPLE_CGROUP carries); empty if no record named it.
  std::string_view cgroup_path(uint64_t id) const;

  const std::vector<BpfProgram>& bpf_programs() const;
  // What pass 1 counted: sideband_bad_records, ksymbol_unregister_unknown,
  // bpf_event_without_ksymbol, programs_without_info.
  const DiagCounts& diagnostics() const;
  // Why a packed kallsyms snapshot (Features::kallsyms_packed) could not be
  // decoded, after finish(); kernel code is then unnamed.
  const std::optional<Error>& kallsyms_error() const;
  // A block of a version 5 snapshot that lookups found damaged (its kernel
  // frames are unnamed); known once the lookups have run.
  std::optional<Error> kallsyms_damage() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bpfprof::symbols
