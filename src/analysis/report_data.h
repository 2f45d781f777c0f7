// SPDX-License-Identifier: Apache-2.0
// ReportData: everything renderers see — header facts, the BPF program table
// and the aggregated profile. Renderers never see records.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bpf/prog_info.h"
#include "profile/profile.h"

namespace bpfprof::analysis {

// Facts about the recording for the report header. Times are event-clock ns.
struct Header {
  std::string host;      // HOSTNAME feature, "" if absent
  std::string kernel;    // OSRELEASE feature
  std::string arch;
  std::string recorded_by;  // VERSION feature: "bpfprof 0.1.0 (commit ...)" or "perf 6.1.x"
  std::vector<std::string> events;  // attr names ("cycles", "dummy:u", ...)
  uint64_t start_ns = 0;  // earliest non-zero timestamp of any record
  uint64_t end_ns = 0;    // latest timestamp of any record
  uint64_t records = 0;   // records in the data section
  uint64_t lost = 0;      // LOST + LOST_SAMPLES: samples/records the kernel dropped
  uint64_t throttled = 0; // THROTTLE records
  // Where kernel names come from when not from the file's kallsyms snapshot
  // (none, or --kallsyms FILE); empty when from the snapshot.
  std::string kernel_symbols;
  // Feature sections present but unreadable, one line each naming the
  // section and its byte offset (feature_sections_unreadable counts them).
  std::vector<std::string> unreadable_sections;
  uint64_t duration_ns() const { return end_ns > start_ns ? end_ns - start_ns : 0; }
};

struct FunctionRow {
  std::string name;  // the function's ksym name
  uint64_t samples = 0;
  uint64_t addr = 0;  // JIT address and length (pprof mappings); 0 = not filled
  uint32_t len = 0;
};

// One BPF program instance (one load .. unload) with what it cost
// (docs/cost.md): the samples whose leaf is in its code (self), whose kernel
// callchain passes through it (callees) and those in the machinery of a hook
// it is attached at (dispatch).
struct ProgramRow {
  uint32_t id = 0;
  // The main function's full name (from its KSYMBOL, which carries the BTF
  // name; kernel_name below is bpf_prog_info's).
  std::string name;
  std::string tag;                     // 16 hex digits
  uint64_t load_ns = 0;                // 0 = loaded before recording began
  std::optional<uint64_t> unload_ns;   // none = still loaded at the end
  uint64_t samples = 0;            // self: the leaf is in its code
  std::vector<FunctionRow> functions;  // in program order (main function first)
  uint64_t callee_samples = 0;     // the chain passes through it, the leaf is outside
  uint64_t dispatch_samples = 0;   // in the machinery of a hook it is attached at
  // Some dispatch samples came from a hook it shares with other programs:
  // their split by self + callees is an estimate.
  bool dispatch_estimated = false;
  uint64_t total_samples() const { return samples + callee_samples + dispatch_samples; }
  // The figure a report ranks by: total, or self (`--cost self`).
  uint64_t cost(bool total) const { return total ? total_samples() : samples; }
  // Measured by the kernel (record --bpf-stats): runs and run time during the
  // recording; none when the file has no value for this program.
  std::optional<uint64_t> run_cnt, run_time_ns;
  // Who owns it: `comm[pid]` of the task that loaded it (its BPF_EVENT) or,
  // for a program loaded before recording, of every process that held an fd
  // of it or of a link of it then (comma-separated); `[pinned]` when only a
  // BPF filesystem held it; `[unknown]` when the recording does not say.
  std::string owner = "[unknown]";
  std::vector<uint32_t> owner_pids;  // the pids named in `owner`
  // The thread that loaded it (from its BPF_EVENT's sample id); empty for a
  // program loaded before recording (processes hold it, no thread).
  std::vector<uint32_t> owner_tids;
  // The owner's cgroup: the loader's when it loaded the program, the
  // holders' at start (comma-separated), as the recording's CGROUP records
  // name it; `[unknown]` when the recording does not tell.
  std::string owner_cgroup = "[unknown]";
  // Where it was attached, as a user writes it (section 254): every point
  // the recording lists for it; `attach` joins them with ", ", or says
  // `[none known]` (the file has the section, it names none for this
  // program) or `[unknown]` (a file without the section).
  std::vector<std::string> attach_points;
  std::string attach = "[unknown]";
  // Each point with the path that named it (`link`: a BPF link listed at
  // start or end; `link_by_id`: a link made during the recording, queried
  // by id; `capture`: the in-kernel capture at the attach; `task_fd_query`:
  // BPF_TASK_FD_QUERY on a perf-event fd of the process `by`; `listing`: the
  // cgroup, XDP, tcx and tc queries) and, where known, the process that
  // holds the attachment (`comm[pid]`, else ""). Sorted, each once.
  struct AttachDetail {
    std::string point, via, by;
    auto operator<=>(const AttachDetail&) const = default;
  };
  std::vector<AttachDetail> attach_details;
  // From the stored BPF_PROG_INFO: JIT image and translated sizes (bytes)
  // and the instructions the verifier processed; none without stored info.
  std::optional<uint32_t> jited_len, xlated_len, verified_insns;
  // Its bpf_metadata_* variables (name without the prefix, value) from a
  // BPF_METADATA record (perf 6.17+) and bpfprof's section 248, one list;
  // empty when the file has none for it.
  bpf::Metadata metadata;
  // The maps it uses (section 249), in the kernel's order; none when the
  // recording does not say.
  std::optional<std::vector<bpf::MapInfo>> maps;
  // The name bpf_prog_info stores, which the kernel cuts at 15 characters;
  // none without stored info.
  std::optional<std::string> kernel_name;
};

// How the recorder enriched BPF programs (bpfprof's feature 251), and
// whether it recorded run statistics (252).
struct EnrichmentSummary {
  std::string path;       // "in-kernel capture at load", "user-space enricher (SCHED_FIFO)"
  // The in-kernel capture: "used", "not used: <why>"; in files of version 1 the
  // answer of a probe never used: "refused (EPERM)", "allowed (not used)", ...
  std::string in_kernel;
  int in_kernel_errno = -1;
  uint64_t programs = 0;  // synthesized + loaded during the recording
  uint64_t stored = 0;    // with BPF_PROG_INFO
  uint64_t gone = 0;      // unloaded before the enricher took a reference
  uint64_t lost = 0;      // LOST records in the enricher's rings
  uint64_t captured = 0;      // captured in the kernel at load
  uint64_t enriched_by_id = 0;  // with capture active, enriched by id (and stored)
  uint64_t capture_lost = 0;  // capture records its ring could not take
  bool v1 = false;            // the file's section 251 is version 1
  uint64_t median_hold_ns = 0, max_hold_ns = 0;  // references held (delayed unloads)
  bool bpf_stats = false;
  uint64_t stats_poll_ns = 0;  // how often live programs' statistics were read
};

struct ReportData {
  Header header;
  // In the symbolizer's program order; index i is Frame::bpf_program == i + 1.
  std::vector<ProgramRow> programs;
  profile::Profile profile;  // diagnostics() holds every diagnostic of the recording
  std::optional<EnrichmentSummary> enrichment;  // files bpfprof recorded
  // Whether samples carry callchains: without them a program's cost is its
  // self samples alone.
  bool callchains = false;
};

// Program names indexed like ReportData::programs (for profile::GroupOptions).
std::vector<std::string> program_names(const ReportData& data);
// Program owners, the same way.
std::vector<std::string> program_owners(const ReportData& data);

// Program attach points (ProgramRow::attach), the same way.
std::vector<std::string> program_attach_points(const ReportData& data);
// Each program's self + callee samples, the same way: how a hook's dispatch
// shared by several programs is split among them.
std::vector<uint64_t> program_weights(const ReportData& data);

// What each owner's programs cost (total, or self with `total` false), most
// first (ties by name): the header line.
struct OwnerCost {
  std::string owner;
  std::string cgroups;  // the owner's programs' owner_cgroup, distinct ones comma-separated
  uint64_t samples = 0;
  size_t programs = 0;  // instances with samples
  bool estimated = false;  // some of it is a share of a hook's dispatch
};
std::vector<OwnerCost> cost_by_owner(const ReportData& data, bool total = true);

}  // namespace bpfprof::analysis
