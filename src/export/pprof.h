// SPDX-License-Identifier: Apache-2.0
// pprof export: the aggregated profile as a gzip-compressed profile.proto
// (proto/profile.proto), which `go tool pprof`, Pyroscope and Parca read.
//
// Sample values are [samples/count, period] where the period is
// cpu/nanoseconds for clock events (cpu-clock, task-clock) and
// <event>/count otherwise (cycles are not time). Every profile frame becomes
// a Location with one Line; functions are keyed by (name, source file).
// Mappings: each BPF program instance its own ("[bpf] <name>", JIT range,
// build_id = tag), kernel code "[kernel.kallsyms]" or the module, user code
// one per file. Samples whose leaf is a BPF program carry the labels
// bpf_prog_id (instances only), bpf_prog_tag and bpf_prog; every sample
// carries comm and pid.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "analysis/report_data.h"
#include "base/error.h"

namespace bpfprof::exporter {

// How BPF frames are told apart.
enum class BpfIdentity : uint8_t {
  kInstance,  // one recording: each load of a program is its own Mapping (id label)
  kTagName,   // many hosts: programs are the same when tag and name agree (ids differ)
};

// Collects one or more recordings' profiles into one pprof profile.
class PprofBuilder {
 public:
  // With `bpf_only`, only samples whose leaf is BPF code (program or trampoline).
  explicit PprofBuilder(BpfIdentity identity = BpfIdentity::kInstance, bool bpf_only = false);
  ~PprofBuilder();
  PprofBuilder(const PprofBuilder&) = delete;
  PprofBuilder& operator=(const PprofBuilder&) = delete;

  // Adds every sample of `data`. Under kInstance, FunctionRow addresses (when
  // filled, see add_bpf_addresses) give BPF mappings their JIT ranges and
  // locations their addresses; under kTagName both stay 0, since addresses of
  // different hosts mean nothing together. `host`, when not empty, labels
  // every sample of this recording.
  void add(const analysis::ReportData& data, std::string_view host = {});

  // The profile.proto bytes, uncompressed.
  std::string serialize() const;
  // gzip-compressed, as pprof files are.
  Result<std::string> encode() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One recording, per program instance, gzip-compressed: the file's bytes, or
// written to `path` ("-" = stdout) or an open file.
Result<std::string> render_pprof(const analysis::ReportData& data, bool bpf_only = false);
Status write_pprof(const analysis::ReportData& data, const std::string& path);
Status write_pprof(const analysis::ReportData& data, std::FILE* out);

}  // namespace bpfprof::exporter
