// SPDX-License-Identifier: Apache-2.0
// User-space state per process from MMAP/MMAP2, FORK, EXIT and COMM, applied
// in time order: each process (pid = tgid; threads share it) gets an
// IntervalTimeline of its executable mappings, so a lookup asks what was
// mapped at the sample's time. fork copies the parent's mappings (unless the
// record is perf's synthesized FORK_EXEC form), and a later mmap over an
// earlier one wins from its time on. exec (COMM with comm_exec) ends none:
// the new image's maps are laid over the old, which stay where nothing new
// lies, for the samples of the execve call itself.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "symbols/elf_symbols.h"
#include "symbols/interval_timeline.h"

namespace bpfprof::symbols {

// A mapped file as one MMAP2 names it (path + build id, if given).
struct MappedFile {
  std::string_view path;
  std::vector<uint8_t> build_id;     // empty: the record carried none
  uint32_t elf = ElfCache::kNoSlot;  // kNoSlot: no file behind it ([heap], //anon, ...)
  bool vdso = false;  // "[vdso]": read from the recording's image, if it has one
};

struct MapPayload {
  uint32_t file = 0;  // index into ProcessMaps::file()
  uint64_t pgoff = 0;
};

class ProcessMaps {
 public:
  using Timeline = IntervalTimeline<MapPayload>;

  explicit ProcessMaps(ElfCache& elf) : elf_(elf) {}
  // Before pass 1: the ElfCache slot of the recording's vDSO image, which
  // [vdso] mappings are read from (none: they have no file).
  void set_vdso_slot(uint32_t slot) { vdso_slot_ = slot; }

  // Pass 1, in time order; strings must be interned (they are kept as views).
  void on_mmap(uint64_t time, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
               std::string_view filename, std::span<const uint8_t> build_id);
  void on_comm(uint64_t time, uint32_t pid, uint32_t tid, std::string_view comm, bool exec);
  void on_fork(uint64_t time, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid,
               bool fork_exec);
  void finish();

  // Pass 2. Null if the pid never appeared.
  const Timeline* process(uint32_t pid) const;
  const MappedFile& file(uint32_t i) const { return files_[i]; }
  // A name and the times [from, to) it stays in force for.
  struct CommSpan {
    std::string_view comm;
    uint64_t from = 0, to = UINT64_MAX;
  };
  // The thread's name at `time`: the latest COMM at or before it (the
  // earliest one if the sample precedes them all), else the process's; empty
  // if neither is known (for all times).
  CommSpan comm_span(uint32_t pid, uint32_t tid, uint64_t time) const;
  std::string_view comm(uint32_t pid, uint32_t tid, uint64_t time) const {
    return comm_span(pid, tid, time).comm;
  }

 private:
  struct CommAt {
    uint64_t time;
    std::string_view comm;
  };
  Timeline& process_mut(uint32_t pid) { return procs_[pid]; }
  void end_all(Timeline& t, uint64_t time);
  uint32_t file_index(std::string_view path, std::span<const uint8_t> build_id);
  // The name in force at `time` (the first one before any), with its times.
  static CommSpan comm_in(const std::vector<CommAt>& list, uint64_t time);

  ElfCache& elf_;
  uint32_t vdso_slot_ = ElfCache::kNoSlot;
  std::unordered_map<uint32_t, Timeline> procs_;
  std::unordered_map<uint32_t, std::vector<CommAt>> comms_;  // by tid
  uint64_t serial_ = 0;  // set by finish(): comm() may remember lookups then
  std::vector<MappedFile> files_;
  std::unordered_map<std::string, uint32_t> file_index_;  // path + NUL + build id bytes
};

// Mappings with no file to read symbols from: [vdso], [heap], //anon, memfd...
bool is_fileless_mapping(std::string_view path);

}  // namespace bpfprof::symbols
