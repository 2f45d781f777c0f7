// SPDX-License-Identifier: Apache-2.0
#include "record/run_stats_table.h"

#include "record/enricher.h"

namespace bpfprof::record {

using perfdata::ProgramRunStats;

void RunStatsTable::update(uint32_t id, uint64_t at, uint64_t run_cnt, uint64_t run_time_ns,
                           uint32_t flags) {
  auto [it, inserted] = by_id_.try_emplace(id);
  ProgramRunStats& p = it->second;
  p.id = id;
  p.flags |= flags;
  if (inserted || at < p.first_ns) {
    p.first_ns = at;
    p.first_run_cnt = run_cnt;
    p.first_run_time_ns = run_time_ns;
  }
  if (inserted || at >= p.last_ns) {
    p.last_ns = at;
    p.last_run_cnt = run_cnt;
    p.last_run_time_ns = run_time_ns;
  }
}

void RunStatsTable::saw(uint32_t id, uint64_t now, const bpf::RunStats& s, bool loaded_during) {
  update(id, now, s.run_cnt, s.run_time_ns, loaded_during ? ProgramRunStats::kLoadedDuring : 0);
}

size_t RunStatsTable::poll(bool at_end) {
  auto ids = bpf::list_prog_ids();
  if (!ids.ok()) return 0;
  size_t read = 0;
  for (uint32_t id : *ids) {
    auto fd = bpf::prog_fd_by_id(id);
    if (!fd.ok()) continue;  // unloaded since the enumeration
    auto s = bpf::read_run_stats(fd->get());
    if (!s.ok()) continue;
    update(id, monotonic_ns(), s->run_cnt, s->run_time_ns, at_end ? ProgramRunStats::kReadAtEnd : 0);
    read++;
  }
  return read;
}

void RunStatsTable::merge(const RunStatsTable& other) {
  for (const auto& [id, p] : other.by_id_) {
    update(id, p.first_ns, p.first_run_cnt, p.first_run_time_ns, p.flags);
    update(id, p.last_ns, p.last_run_cnt, p.last_run_time_ns, 0);
  }
}

RunStatsTable RunStatsTable::since(const RunStatsTable& at_switch, uint64_t file_start_ns) const {
  RunStatsTable out;
  for (const auto& [id, p] : by_id_) {
    auto before = at_switch.by_id_.find(id);
    if (before == at_switch.by_id_.end()) {
      // First seen in this file (loaded during it, or first polled in it).
      out.by_id_.emplace(id, p);
      continue;
    }
    const ProgramRunStats& b = before->second;
    if (p.last_ns <= b.last_ns && p.last_ns < file_start_ns) continue;
    ProgramRunStats q = p;
    // Its counters ran before this file: the file's start value is the
    // last one read by then.
    q.flags &= ~ProgramRunStats::kLoadedDuring;
    q.first_ns = b.last_ns;
    q.first_run_cnt = b.last_run_cnt;
    q.first_run_time_ns = b.last_run_time_ns;
    out.by_id_.emplace(id, q);
  }
  return out;
}

std::vector<ProgramRunStats> RunStatsTable::entries() const {
  std::vector<ProgramRunStats> out;
  out.reserve(by_id_.size());
  for (const auto& [id, p] : by_id_) out.push_back(p);
  return out;
}

}  // namespace bpfprof::record
