// SPDX-License-Identifier: Apache-2.0
// The diagnostics every report shows (DESIGN rule 3: nothing recorded is lost
// silently), declared once: the name (the JSON key and the text footer's
// word), the severity, when it is listed, and what it counts. The table in
// docs/diagnostics.md is checked against this one by a test
// (src/base/diagnostics_test.cc).
//
// Adding a counter is one line in BPFPROF_DIAGNOSTICS (and its line in
// docs/diagnostics.md): X(enumerator, "name", severity, listed, "meaning").
// Code counts it with `counts[Diag::kEnumerator] += n` where the problem is
// found; the counts travel as a DiagCounts to the renderers, which list them
// by name (kDiagnosticsByName, listed()).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

// Severity: kLoss — something recorded could not be used (records, samples or
// feature sections skipped); kUnnamed — code shown without its name; kNote —
// the data is whole but was not written as the format asks.
// Listed: kAlways, or kNonZero (only when it happened).
#define BPFPROF_DIAGNOSTICS(X)                                                                     \
  X(kRecordsUnknownType, "records_unknown_type", kLoss, kAlways,                                   \
    "records of a type perf 6.1 does not write (skipped)")                                         \
  X(kRecordsUnknownAttr, "records_unknown_attr", kLoss, kAlways,                                   \
    "records whose id matches no attr (skipped)")                                                  \
  X(kRecordsBad, "records_bad", kLoss, kAlways, "LOST and LOST_SAMPLES records that failed to parse") \
  X(kSamplesBad, "samples_bad", kLoss, kAlways, "samples that failed to parse (skipped)")          \
  X(kSampleChunksUnreadable, "sample_chunks_unreadable", kLoss, kNonZero,                          \
    "chunks of samples pass 2 could not read (the file changed between the passes)")              \
  X(kSidebandBadRecords, "sideband_bad_records", kLoss, kAlways,                                   \
    "side-band records that failed to parse (skipped)")                                            \
  X(kSidebandUntimed, "sideband_untimed", kNote, kAlways,                                          \
    "side-band records without a time (applied with the synthesized state, first)")                             \
  X(kSidebandOutOfOrder, "sideband_out_of_order", kNote, kAlways,                                  \
    "side-band records written after a later round had been closed (still applied at their time)") \
  X(kFeatureSectionsUnreadable, "feature_sections_unreadable", kLoss, kAlways,                     \
    "feature sections that could not be read (the report goes on without them)")                  \
  X(kFeatureSectionsUnknown, "feature_sections_unknown", kNote, kAlways,                           \
    "feature sections of a kind this version does not know (skipped)")                             \
  X(kKsymbolUnregisterUnknown, "ksymbol_unregister_unknown", kNote, kAlways,                       \
    "KSYMBOL unregisters of a symbol that was never registered")                                   \
  X(kBpfEventWithoutKsymbol, "bpf_event_without_ksymbol", kUnnamed, kAlways,                       \
    "BPF_EVENT program loads without a KSYMBOL for their code")                                    \
  X(kProgramsWithoutInfo, "programs_without_info", kUnnamed, kAlways,                              \
    "program loads without a stored BPF_PROG_INFO (no line info, no annotate)")                    \
  X(kBpfSamplesUnattributed, "bpf_samples_unattributed", kUnnamed, kAlways,                        \
    "samples whose leaf is in a BPF address range where nothing was loaded at that time")         \
  X(kBpfDispatchUnattributed, "bpf_dispatch_unattributed", kUnnamed, kNonZero,                   \
    "samples in the machinery that runs BPF programs at a hook (docs/cost.md) where the recording names no program alive and attached at that hook: charged to none") \
  X(kBpfCostUnproven, "bpf_cost_unproven", kUnnamed, kNonZero,                                    \
    "kernel callchains that hold address 0, an address in BPF code where no program was loaded at the time, or a context the report does not read, before any program or hook frame; or that end where the kernel cut them: charged only as far as they prove") \
  X(kBpfOwnerUnknown, "bpf_owner_unknown", kUnnamed, kNonZero,                                    \
    "BPF programs whose owner the recording does not tell (loaded before recording with no holder found, or in a file without section 253)") \
  X(kBpfOwnerCgroupUnknown, "bpf_owner_cgroup_unknown", kUnnamed, kNonZero,                      \
    "BPF programs whose owner is a process but whose owner's cgroup the recording does not tell (loaded without the in-kernel capture, or no CGROUP record names it)") \
  X(kBpfAttachUnknown, "bpf_attach_unknown", kUnnamed, kNonZero,                                 \
    "BPF programs whose attach point the recording does not tell ([none known]: none listed at start or end nor captured; [unknown]: a file without section 254)") \
  X(kBpfLinksLost, "bpf_links_lost", kLoss, kNonZero,                                              \
    "BPF links created during the recording whose attach point is unknown (a link type the in-kernel capture does not read, or a record its ring could not take, gone before its query by id)") \
  X(kBpfAttachFdLost, "bpf_attach_fd_lost", kUnnamed, kNonZero,                                   \
    "perf-event fds listed in /proc/PID/fd gone before BPF_TASK_FD_QUERY (the process exited, closed the fd or detached): the point of a program attached through one may be unknown") \
  X(kBpfAttachFdUnreadable, "bpf_attach_fd_unreadable", kUnnamed, kNonZero,                       \
    "/proc/PID/fd directories the recorder could not read (most in one listing): programs attached through those processes' perf events may show [none known]") \
  X(kBpfMetadataBad, "bpf_metadata_bad", kLoss, kNonZero,                                         \
    "BPF_METADATA records (perf 6.17+: a program's bpf_metadata_* variables) that failed to parse; the program they name shows no metadata") \
  X(kCgroupUnknown, "cgroup_unknown", kUnnamed, kNonZero,                                          \
    "samples counted under cgroup/container as [unknown] (recorded without --cgroup) or as an id no CGROUP record named") \
  X(kUnknownFramesNoKallsyms, "unknown_frames.no_kallsyms", kUnnamed, kAlways,                     \
    "kernel frames in a file without a kallsyms snapshot")                                         \
  X(kUnknownFramesKernelNoSymbol, "unknown_frames.kernel_no_symbol", kUnnamed, kAlways,            \
    "kernel frames outside every known symbol")                                                    \
  X(kUnknownFramesBpfNotAlive, "unknown_frames.bpf_not_alive", kUnnamed, kAlways,                  \
    "frames in a BPF range that was not registered at that time")                                  \
  X(kUnknownFramesNoMap, "unknown_frames.no_map", kUnnamed, kAlways,                               \
    "user frames in no MMAP of their process at that time")                                        \
  X(kUnknownFramesNoElf, "unknown_frames.no_elf", kUnnamed, kAlways,                               \
    "user frames whose file cannot be opened, is not ELF, or has another build id")               \
  X(kUnknownFramesNoSymbol, "unknown_frames.no_symbol", kUnnamed, kAlways,                         \
    "user frames no ELF symbol covers")                                                            \
  X(kUnknownFramesNoProcess, "unknown_frames.no_process", kUnnamed, kAlways,                       \
    "user frames of a process the stream never named")                                             \
  X(kUnknownFramesNoFile, "unknown_frames.no_file", kUnnamed, kAlways,                             \
    "user frames in a mapping without a file ([heap], anonymous, memfd)")                          \
  X(kUnknownFramesNoVdso, "unknown_frames.no_vdso", kUnnamed, kNonZero,                           \
    "[vdso] frames in a recording without a readable vDSO image (section 255 missing, as in perf's files, or damaged)")

namespace bpfprof {

enum class Diag : uint8_t {
#define BPFPROF_DIAG_ENUMERATOR(id, name, severity, listed, meaning) id,
  BPFPROF_DIAGNOSTICS(BPFPROF_DIAG_ENUMERATOR)
#undef BPFPROF_DIAG_ENUMERATOR
};

struct DiagInfo {
  enum class Severity : uint8_t { kLoss, kUnnamed, kNote };
  enum class Listed : uint8_t { kAlways, kNonZero };
  Diag diag;
  std::string_view name;
  Severity severity;
  Listed listed;
  std::string_view meaning;
};

inline constexpr DiagInfo kDiagnostics[] = {
#define BPFPROF_DIAG_INFO(id, name, severity, listed, meaning) \
  {Diag::id, name, DiagInfo::Severity::severity, DiagInfo::Listed::listed, meaning},
    BPFPROF_DIAGNOSTICS(BPFPROF_DIAG_INFO)
#undef BPFPROF_DIAG_INFO
};
inline constexpr size_t kDiagCount = std::size(kDiagnostics);

constexpr const DiagInfo& diag_info(Diag d) { return kDiagnostics[static_cast<size_t>(d)]; }
constexpr std::string_view severity_name(DiagInfo::Severity s) {
  switch (s) {
    case DiagInfo::Severity::kLoss: return "loss";
    case DiagInfo::Severity::kUnnamed: return "unnamed";
    case DiagInfo::Severity::kNote: return "note";
  }
  return "?";
}

constexpr std::string_view listed_name(DiagInfo::Listed l) {
  return l == DiagInfo::Listed::kAlways ? "always" : "when not 0";
}

// Whether a report lists diagnostic `d` when it counted `value`: kAlways
// entries always, so a zero says nothing of that kind happened; kNonZero ones
// only when it happened.
constexpr bool listed(const DiagInfo& d, uint64_t value) {
  return d.listed == DiagInfo::Listed::kAlways || value != 0;
}

// The diagnostics in name order: the order reports list them in (the text
// footer, the JSON object).
inline constexpr std::array<Diag, kDiagCount> kDiagnosticsByName = [] {
  std::array<Diag, kDiagCount> order{};
  for (size_t i = 0; i < kDiagCount; i++) order[i] = kDiagnostics[i].diag;
  std::sort(order.begin(), order.end(),
            [](Diag a, Diag b) { return diag_info(a).name < diag_info(b).name; });
  return order;
}();

// One value per diagnostic, zero until counted.
class DiagCounts {
 public:
  uint64_t& operator[](Diag d) { return v_[static_cast<size_t>(d)]; }
  uint64_t operator[](Diag d) const { return v_[static_cast<size_t>(d)]; }
  DiagCounts& operator+=(const DiagCounts& o) {
    for (size_t i = 0; i < kDiagCount; i++) v_[i] += o.v_[i];
    return *this;
  }
  bool operator==(const DiagCounts&) const = default;

 private:
  std::array<uint64_t, kDiagCount> v_{};
};

}  // namespace bpfprof
