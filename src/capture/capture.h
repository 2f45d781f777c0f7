// SPDX-License-Identifier: Apache-2.0
// In-kernel capture of program info at load (bpf/capture.bpf.c): one
// tracepoint program on syscalls/sys_exit_bpf copies what
// bpf_prog_info would report for every program loaded through
// BPF_PROG_LOAD, from the kernel's own structures, before the loader's
// syscall returns, into a BPF ring buffer. The recorder drains that ring on
// its normal cadence (nothing wakes it) and turns each capture into the same
// bpf::ProgInfo / bpf::BtfBlob the enricher produces. No reference to any
// program is taken.
//
// The programs are attached through links owned by this process's fds: any
// exit of the recorder, a crash included, detaches and frees them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>

#include "base/error.h"
#include "bpf/prog_info.h"
#include "capture/capture_config.h"
#include "capture/capture_records.h"

namespace bpfprof::capture {

// What the capture programs counted (summed over CPUs).
struct CaptureCounters {
  uint64_t captured = 0;      // programs sent whole
  uint64_t incomplete = 0;    // programs with a piece the ring could not take
  uint64_t lost_records = 0;  // ring reservations that failed
  uint64_t not_program = 0;   // the returned fd no longer named the new program
  uint64_t read_errors = 0;   // kernel reads that failed
  uint64_t links = 0;         // links and attachments sent
  uint64_t links_missed = 0;  // links and attachments the ring could not take
};

class Capture {
 public:
  // Loads the object (CO-RE against the running kernel's BTF), finds the
  // tracepoints and attaches. The error says why capture cannot run here.
  static Result<std::unique_ptr<Capture>> start(const CaptureConfig& config);
  ~Capture();
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;

  // Takes every record in the ring (never blocks). Programs whose last
  // record arrived are complete (infos()) or incomplete (incomplete()).
  Status consume();
  // Detaches the programs and consumes what they wrote. Idempotent.
  void stop();

  bool captured(uint32_t id) const { return records_.captured(id); }
  // Programs whose capture did not fit the ring: to be enriched by id.
  // (infos() may also hold programs a caller enriched by id.)
  const std::set<uint32_t>& incomplete() const { return records_.incomplete(); }
  std::map<uint32_t, bpf::ProgInfo>& infos() { return records_.infos(); }
  std::map<uint32_t, bpf::BtfBlob>& btfs() { return records_.btfs(); }
  // Read from the kernel's per-CPU counters (valid until the object is freed).
  CaptureCounters counters() const;
  // Records that did not parse (a bug, never expected).
  uint64_t bad_records() const { return records_.bad_records(); }
  // Programs the kernel side reported as not captured whole.
  uint64_t missed() const { return records_.missed(); }
  // Links and attachments seen since the last call, and the ids of links
  // whose record did not fit (see CaptureAssembler::take_links).
  void take_links(std::vector<CapturedLink>& links, std::vector<uint32_t>& missed_link_ids) {
    records_.take_links(links, missed_link_ids);
  }
  // Programs run through BPF_PROG_TEST_RUN: id -> first run seen.
  const std::map<uint32_t, uint64_t>& test_runs() const { return records_.test_runs(); }
  // (program id, loader's cgroup id) seen since the last call.
  void take_loader_cgroups(std::vector<std::pair<uint32_t, uint64_t>>& out) {
    records_.take_loader_cgroups(out);
  }
  // Captured programs BPF_PROG_BIND_MAP added maps to: their whole lists.
  void take_bound_maps(std::map<uint32_t, std::vector<bpf::MapInfo>>& out) {
    records_.take_bound_maps(out);
  }
  // The value captured of .rodata map `map_id`, or null.
  const CapturedValue* map_value(uint32_t map_id) const { return records_.map_value(map_id); }
  // Readable when the capture wants a drain now: a program did not fit, or
  // the ring is half full. Nothing else wakes it. -1 after stop().
  int wake_fd() const;

  // The ring's record handler (public for libbpf's C callback).
  int on_record(std::span<const std::byte> rec);

 private:
  struct State;
  Capture();
  std::unique_ptr<State> state_;
  CaptureAssembler records_;
  CaptureCounters final_counters_;
  bool stopped_ = false;
};

// The id of the bpf() syscall's exit tracepoint, read from tracefs. Where
// tracefs is not mounted, a short-lived thread of our own mounts it in a
// private mount namespace (nothing changes in the host's mount table) and
// reads it.
Result<uint64_t> find_bpf_exit_tracepoint();

}  // namespace bpfprof::capture
