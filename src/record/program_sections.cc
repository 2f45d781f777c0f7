// SPDX-License-Identifier: Apache-2.0
#include "record/program_sections.h"

#include <algorithm>
#include <set>
#include <string>
#include <tuple>

#include "bpf/attach.h"
#include "host/attach_points.h"

namespace bpfprof::record {

Result<ProgramSections> ProgramSections::start(perfdata::FileWriter& writer,
                                               host::ProgramPlaces places,
                                               std::optional<host::Cgroup2Mount> cgroup2,
                                               CaptureEnricher* in_kernel,
                                               const RecordSink& sink) {
  ProgramSections s(writer, in_kernel);
  s.cgroup2_ = std::move(cgroup2);
  s.owners_ = std::move(places.owners);
  BPFPROF_TRY(
      writer.append_in_stream(perfdata::kFeatBpfprofOwners, perfdata::encode_owners(s.owners_)));
  host::AttachScan& scan = places.attach;
  if (scan.failed && sink.notice) sink.notice("BPF links not listed: " + scan.failed->to_string());
  s.attach_.entries = std::move(scan.entries);
  s.attach_.perf_fds_lost = scan.perf_fds_lost;
  s.attach_.fd_dirs_unreadable = scan.fd_dirs_unreadable;
  BPFPROF_TRY(
      writer.append_in_stream(perfdata::kFeatBpfprofAttach, perfdata::encode_attach(s.attach_)));
  if (in_kernel) in_kernel->set_attach_context(s.cgroup2_, std::move(scan.cgroup_paths));
  return s;
}

Status ProgramSections::add_loaders(std::vector<std::pair<uint32_t, uint64_t>> learned) {
  if (learned.empty() || writer_->write_failed()) return ok_status();
  perfdata::OwnersSection more;
  for (const auto& [prog, cgroup] : learned) more.loaders.push_back({prog, cgroup});
  Status s = writer_->append_in_stream(perfdata::kFeatBpfprofOwners, perfdata::encode_owners(more));
  owners_.loaders.insert(owners_.loaders.end(), more.loaders.begin(), more.loaders.end());
  return s;
}

Status ProgramSections::add_attach(std::vector<perfdata::AttachEntry> learned) {
  if (learned.empty() || writer_->write_failed()) return ok_status();
  perfdata::AttachSection more{learned, in_kernel_ ? in_kernel_->links_lost() : 0,
                               attach_.perf_fds_lost, attach_.fd_dirs_unreadable};
  Status s = writer_->append_in_stream(perfdata::kFeatBpfprofAttach, perfdata::encode_attach(more));
  for (perfdata::AttachEntry& e : learned) attach_.entries.push_back(std::move(e));
  return s;
}

void ProgramSections::saw_loaded(const std::vector<bpf::ProgInfo>& infos, uint64_t now_ns) {
  constexpr uint32_t kSchedCls = 3, kSchedAct = 4;  // BPF_PROG_TYPE_SCHED_CLS, _SCHED_ACT
  constexpr uint32_t kKprobe = 2, kTracepoint = 5;  // BPF_PROG_TYPE_KPROBE, _TRACEPOINT
  for (const bpf::ProgInfo& p : infos) {
    if (p.info.type == kSchedCls || p.info.type == kSchedAct) tc_watch_.emplace(p.id(), now_ns);
    if (p.info.type == kKprobe || p.info.type == kTracepoint) perf_watch_.emplace(p.id(), now_ns);
  }
}

namespace {

// Forgets the watched programs that have a point or were watched long
// enough; true when some remain.
bool still_unnamed(std::map<uint32_t, uint64_t>& watch,
                   const std::set<std::pair<uint32_t, std::string>>& known, uint64_t now_ns) {
  std::erase_if(watch, [&](const auto& w) {
    auto named = known.lower_bound({w.first, std::string()});
    return (named != known.end() && named->first == w.first) ||
           now_ns - w.second > ProgramSections::kTcWatchNs;
  });
  return !watch.empty();
}

}  // namespace

Result<bool> ProgramSections::relist_perf_fds(uint64_t now_ns) {
  if (perf_watch_.empty() || now_ns - perf_listed_ns_ < kTcRelistNs) return false;
  std::set<std::pair<uint32_t, std::string>> known;
  for (const perfdata::AttachEntry& e : attach_.entries) known.emplace(e.prog_id, e.point);
  if (!still_unnamed(perf_watch_, known, now_ns)) return false;
  perf_listed_ns_ = now_ns;
  host::PerfFdScan scan = host::scan_perf_event_fds(perfdata::AttachEntry::kListed, now_ns);
  attach_.perf_fds_lost += scan.lost;
  attach_.fd_dirs_unreadable = std::max(attach_.fd_dirs_unreadable, scan.unreadable);
  std::vector<perfdata::AttachEntry> added;
  for (perfdata::AttachEntry& e : scan.entries) {
    if (known.emplace(e.prog_id, e.point).second) added.push_back(std::move(e));
  }
  if (!added.empty()) {
    // A perf event behind a link is the link's to name (the capture, the
    // end listing): only programs set on the event itself are kept.
    std::set<uint32_t> linked;
    if (auto links = bpf::list_links(); links.ok()) {
      for (const bpf::LinkInfo& l : *links) {
        if (l.type == bpf::kLinkPerfEvent) linked.insert(l.prog_id);
      }
    }
    std::erase_if(added, [&](const perfdata::AttachEntry& e) { return linked.count(e.prog_id) > 0; });
  }
  const bool found = !added.empty();
  BPFPROF_TRY(add_attach(std::move(added)));
  return found;
}

Result<bool> ProgramSections::relist_tc(uint64_t now_ns) {
  if (tc_watch_.empty() || now_ns - tc_listed_ns_ < kTcRelistNs) return false;
  std::set<std::pair<uint32_t, std::string>> known;
  for (const perfdata::AttachEntry& e : attach_.entries) known.emplace(e.prog_id, e.point);
  if (!still_unnamed(tc_watch_, known, now_ns)) return false;
  tc_listed_ns_ = now_ns;
  std::vector<perfdata::AttachEntry> added;
  for (perfdata::AttachEntry& e : host::scan_tc_filters(perfdata::AttachEntry::kListed, now_ns)) {
    if (known.emplace(e.prog_id, e.point).second) added.push_back(std::move(e));
  }
  const bool found = !added.empty();
  BPFPROF_TRY(add_attach(std::move(added)));
  return found;
}

Status ProgramSections::take_captured() {
  if (!in_kernel_) return ok_status();
  // Each piece is kept in memory even when writing one failed (the close
  // cuts the file back and reports it): the first error is returned.
  std::vector<perfdata::AttachEntry> links;
  in_kernel_->take_attach(links);
  Status first = add_attach(std::move(links));
  std::vector<std::pair<uint32_t, uint64_t>> loaders;
  in_kernel_->take_loader_cgroups(loaders);
  Status second = add_loaders(std::move(loaders));
  return first.ok() ? second : first;
}

Status ProgramSections::list_at_end() {
  Status first = take_captured();
  auto keep = [&first](Status s) {
    if (first.ok() && !s.ok()) first = std::move(s);
  };
  host::AttachScan end = host::scan_attach_points(cgroup2_, perfdata::AttachEntry::kAtEnd, monotonic_ns());
  attach_.perf_fds_lost += end.perf_fds_lost;
  attach_.fd_dirs_unreadable = std::max(attach_.fd_dirs_unreadable, end.fd_dirs_unreadable);
  std::set<std::tuple<uint32_t, uint32_t, std::string>> known;
  for (const perfdata::AttachEntry& e : attach_.entries) {
    known.emplace(e.prog_id, e.link_id, e.point);
  }
  std::vector<perfdata::AttachEntry> added;
  for (perfdata::AttachEntry& e : end.entries) {
    if (!known.count({e.prog_id, e.link_id, e.point})) added.push_back(std::move(e));
  }
  keep(add_attach(std::move(added)));
  return first;
}

Status ProgramSections::name_unlinked(const std::vector<const bpf::ProgInfo*>& at_start,
                                      const std::vector<const bpf::ProgInfo*>& during,
                                      const std::vector<EnrichedProgram>& programs) {
  std::map<uint32_t, uint64_t> loaded;
  for (const EnrichedProgram& p : programs) loaded[p.id] = p.load_time_ns;
  std::vector<host::KnownProgram> known;
  for (const bpf::ProgInfo* p : at_start) {
    known.push_back({p->info.id, p->info.type, perfdata::AttachEntry::kAtStart, 0});
  }
  const uint32_t source =
      in_kernel_ ? perfdata::AttachEntry::kCaptured : perfdata::AttachEntry::kAtEnd;
  for (const bpf::ProgInfo* p : during) {
    known.push_back({p->id(), p->info.type, source, loaded[p->id()]});
  }
  static const std::map<uint32_t, uint64_t> kNoTestRuns;
  return add_attach(
      host::program_points(attach_.entries, known, in_kernel_ ? in_kernel_->test_runs() : kNoTestRuns));
}

void ProgramSections::move_into(perfdata::Features& features) {
  if (in_kernel_) attach_.links_lost = in_kernel_->links_lost();
  features.owners = std::move(owners_);
  features.attach = std::move(attach_);
}

}  // namespace bpfprof::record
