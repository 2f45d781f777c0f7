// SPDX-License-Identifier: Apache-2.0
#include "analysis/enrichment.h"

#include <algorithm>
#include <cerrno>
#include <map>

#include <fmt/format.h>

namespace bpfprof::analysis {
namespace {

std::string in_kernel_text(int err) {
  if (err < 0) return "not tried";
  if (err == 0) return "allowed (not used)";
  const char* name = err == EPERM ? "EPERM" : err == ENOENT ? "ENOENT" : err == EINVAL ? "EINVAL" : nullptr;
  return name ? fmt::format("refused ({})", name) : fmt::format("refused (errno {})", err);
}

}  // namespace

void add_enrichment(const perfdata::Features& f, ReportData& data) {
  if (f.enrichment) {
    using Entry = perfdata::EnrichedProgramEntry;
    const perfdata::EnrichmentSection& e = *f.enrichment;
    EnrichmentSummary s;
    s.path = e.path == perfdata::EnrichmentPath::kInKernel
                 ? "in-kernel capture at load"
                 : fmt::format("user-space enricher ({}{})", perfdata::sched_name(e.sched),
                               e.pinned    ? ", a thread per CPU"
                               : e.threads ? fmt::format(", {} thread{}", e.threads,
                                                         e.threads == 1 ? "" : "s")
                                           : std::string());
    s.in_kernel_errno = e.in_kernel_errno;
    s.v1 = e.version < 2;
    s.in_kernel = s.v1                                            ? in_kernel_text(e.in_kernel_errno)
                  : e.path == perfdata::EnrichmentPath::kInKernel ? "used"
                                                                  : "not used: " + e.capture_refused;
    s.captured = e.count(Entry::kCaptured);
    s.enriched_by_id = std::count_if(e.programs.begin(), e.programs.end(), [](const Entry& p) {
      return p.has(Entry::kById) && p.has(Entry::kStored);
    });
    s.capture_lost = e.capture_lost;
    s.programs = e.programs.size();
    s.stored = e.count(Entry::kStored);
    s.gone = e.count(Entry::kGone);
    s.lost = e.lost;
    std::vector<uint64_t> holds;
    for (const Entry& p : e.programs) {
      if (p.hold_ns) holds.push_back(p.hold_ns);
    }
    std::sort(holds.begin(), holds.end());
    if (!holds.empty()) {
      s.median_hold_ns = holds[holds.size() / 2];
      s.max_hold_ns = holds.back();
    }
    data.enrichment = s;
  }
  if (!f.run_stats) return;
  if (!data.enrichment) data.enrichment.emplace();
  data.enrichment->bpf_stats = true;
  data.enrichment->stats_poll_ns = f.run_stats->poll_interval_ns;
  std::map<uint32_t, const perfdata::ProgramRunStats*> by_id;
  for (const perfdata::ProgramRunStats& p : f.run_stats->programs) by_id[p.id] = &p;
  for (ProgramRow& row : data.programs) {
    auto it = by_id.find(row.id);
    if (it == by_id.end() || !it->second->measured()) continue;
    row.run_cnt = it->second->run_cnt();
    row.run_time_ns = it->second->run_time_ns();
  }
}

}  // namespace bpfprof::analysis
