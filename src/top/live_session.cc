// SPDX-License-Identifier: Apache-2.0
#include "top/live_session.h"

#include <chrono>
#include <map>
#include <set>
#include <utility>

#include "analysis/aggregate.h"
#include "base/clock.h"
#include "analysis/cost.h"
#include "analysis/sample_frames.h"
#include "bpf/query.h"
#include "host/snapshot.h"
#include "perf/event_open.h"
#include "symbols/symbolizer.h"

namespace bpfprof::top {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Attach points are listed again at the end of an interval in which a program
// loaded (it may have been attached since), and at least this often (an old
// program attached again).
constexpr uint64_t kAttachRescanNs = 10'000'000'000;

// What top samples: kernel callchains (no user stacks: what a program costs
// besides its own code, docs/cost.md), at its frequency, with the fallback
// record has.
record::EventRequest event_request(const LiveOptions& o, const perf::EventSpec& spec,
                                   const std::vector<int>& online) {
  record::EventRequest r;
  r.sampling.event = spec;
  r.sampling.freq = o.frequency;
  r.sampling.callchain = true;
  r.set.cpus = o.cpus.empty() ? online : o.cpus;
  r.set.sideband_cpus = online;
  r.set.sampling_pages = o.sampling_pages;
  r.set.sideband_pages = o.sideband_pages;
  return r;
}

}  // namespace

LiveSession::~LiveSession() { events_.disable_all(); }

Result<std::unique_ptr<LiveSession>> LiveSession::open(const LiveOptions& o, const Notice& notice) {
  BPFPROF_ASSIGN_OR_RETURN(const std::vector<int> online, perf::online_cpus());
  std::unique_ptr<LiveSession> s(new LiveSession());
  s->frequency_ = o.frequency;

  BPFPROF_ASSIGN_OR_RETURN(perf::EventSpec spec, perf::parse_event("cycles"));
  BPFPROF_ASSIGN_OR_RETURN(record::OpenedEvents events,
                           record::open_events(event_request(o, spec, online), notice));
  s->events_ = std::move(events.events);
  s->event_name_ = events.spec.name;
  BPFPROF_ASSIGN_OR_RETURN(perf::SampleLayout layout, perf::SampleLayout::from_attr(events.sampling));
  s->layout_ = std::make_unique<perf::SampleLayout>(layout);
  BPFPROF_TRY(s->events_.enable_sideband());

  // Statistics first, so that the baseline read after the synthesis covers
  // every program it names and programs loaded later count from zero.
  if (o.run_stats) {
    auto fd = bpf::enable_run_stats();
    if (fd.ok()) {
      s->stats_fd_ = std::move(fd).value();
    } else {
      s->run_stats_note_ = "no BPF run statistics: " + fd.error().to_string();
    }
  }
  BPFPROF_TRY(s->synthesize(notice));
  if (s->run_stats()) {
    std::vector<uint32_t> ids;
    for (const bpf::ProgInfo& p : s->features_.bpf_prog_info) ids.push_back(p.id());
    s->baseline_ = s->read_runs(ids);
  }
  BPFPROF_TRY(s->events_.enable_sampling());
  s->interval_start_ns_ = monotonic_ns();
  return s;
}

Status LiveSession::synthesize(const Notice& notice) {
  // The host as record sees it at start (host::Snapshot), kept in memory.
  host::Snapshot snapshot = host::take_snapshot();
  if (!snapshot.kallsyms.text_symbols.empty()) {
    features_.kallsyms = std::move(snapshot.kallsyms.text_symbols);
  }
  auto live_ids = [this] {
    std::set<uint32_t> ids;
    for (record::CpuRing& r : events_.sideband_rings()) {
      host::collect_prog_load_ids(r.ring.peek(), ids);
    }
    return ids;
  };
  auto keep = [this](std::span<const std::byte> b) -> Status {
    sideband_.insert(sideband_.end(), b.begin(), b.end());
    return ok_status();
  };
  host::InitialStateOptions initial;
  initial.trailer = layout_->id_hdr_size();
  BPFPROF_ASSIGN_OR_RETURN(host::BpfSynthesis bpf,
                           host::write_initial_state(snapshot, initial, live_ids, keep, notice));
  features_.bpf_prog_info = std::move(bpf.infos);
  // Who holds the programs loaded before top started (programs loaded later
  // are owned by their loader, from their BPF_EVENT), and where every
  // program is attached, named as record names it.
  const uint64_t now = monotonic_ns();
  host::ProgramPlaces places =
      host::list_program_places(snapshot, bpf.synthesized, perfdata::AttachEntry::kAtEnd, now);
  features_.owners = std::move(places.owners);
  cgroup2_ = snapshot.cgroup2;
  features_.attach.emplace();
  keep_attach(std::move(places.attach), now);
  for (size_t off = 0; off < sideband_.size();) {
    BPFPROF_ASSIGN_OR_RETURN(perf::RecordView r, perf::record_at(sideband_, off));
    off += r.header.size;
    sideband_records_++;
  }
  return ok_status();
}

void LiveSession::scan_attach(uint64_t now_ns) {
  // A failed link listing leaves the other points (cgroups, interfaces).
  keep_attach(host::scan_attach_points(cgroup2_, perfdata::AttachEntry::kAtEnd, now_ns), now_ns);
}

void LiveSession::keep_attach(host::AttachScan scan, uint64_t now_ns) {
  for (perfdata::AttachEntry& e : scan.entries) {
    if (attach_known_.emplace(e.prog_id, e.link_id, e.point).second) {
      features_.attach->entries.push_back(std::move(e));
    }
  }
  attach_scanned_ns_ = now_ns;
}

void LiveSession::keep_sideband(const perf::RecordView& r) {
  sideband_.insert(sideband_.end(), r.bytes.begin(), r.bytes.end());
  sideband_records_++;
}

Status LiveSession::drain() {
  const perf::SampleLayout& layout = *layout_;
  auto count_lost = [&](const perf::RecordView& r) {
    if (r.header.type == perf::kRecordLost) {
      if (auto l = perf::Lost::parse(r, layout); l.ok()) lost_ += l->lost;
    } else if (r.header.type == perf::kRecordLostSamples) {
      if (auto l = perf::LostSamples::parse(r, layout); l.ok()) lost_ += l->lost;
    }
  };
  for (record::CpuRing& c : events_.sampling_rings()) {
    auto n = c.ring.for_each_record([&](const perf::RecordView& r) {
      if (r.header.type == perf::kRecordSample) {
        samples_.insert(samples_.end(), r.bytes.begin(), r.bytes.end());
      } else {
        count_lost(r);
      }
    });
    if (!n.ok()) return std::move(n).error();
  }
  for (record::CpuRing& c : events_.sideband_rings()) {
    auto n = c.ring.for_each_record([&](const perf::RecordView& r) {
      if (symbols::Symbolizer::consumes(r.header.type)) {
        keep_sideband(r);
      } else {
        count_lost(r);
      }
    });
    if (!n.ok()) return std::move(n).error();
  }
  return ok_status();
}

std::vector<RunReading> LiveSession::read_runs(const std::vector<uint32_t>& ids) const {
  std::vector<RunReading> out;
  for (uint32_t id : ids) {
    // A program that unloaded since is skipped: its PROG_UNLOAD will say so.
    auto fd = bpf::prog_fd_by_id(id);
    if (!fd.ok()) continue;
    if (auto s = bpf::read_run_stats(fd->get()); s.ok()) {
      out.push_back(RunReading{id, s->run_cnt, s->run_time_ns});
    }
  }
  return out;
}

Result<Interval> LiveSession::end_interval() {
  BPFPROF_TRY(drain());
  const uint64_t start = interval_start_ns_, end = monotonic_ns();
  const perf::SampleLayout& layout = *layout_;

  auto t0 = std::chrono::steady_clock::now();
  symbols::Symbolizer sym(features_, symbols::Symbolizer::Options{});
  for (size_t off = 0; off < sideband_.size();) {
    BPFPROF_ASSIGN_OR_RETURN(perf::RecordView r, perf::record_at(sideband_, off));
    sym.add_sideband(r, layout);
    off += r.header.size;
  }
  sym.finish();
  cost_.symbolizer_ms = ms_since(t0);
  cost_.sideband_records = sideband_records_;
  cost_.sideband_bytes = sideband_.size();

  // Attach points first: the programs' dispatch is charged by them.
  const std::vector<symbols::BpfProgram>& programs = sym.bpf_programs();
  cost_.attach_scan_ms = 0;
  bool rescan = end - attach_scanned_ns_ >= kAttachRescanNs;
  for (const symbols::BpfProgram& p : programs) rescan = rescan || p.load_time > attach_scanned_ns_;
  if (rescan) {
    t0 = std::chrono::steady_clock::now();
    scan_attach(monotonic_ns());
    cost_.attach_scan_ms = ms_since(t0);
  }

  t0 = std::chrono::steady_clock::now();
  Interval iv;
  iv.seconds = static_cast<double>(end - start) / 1e9;
  std::vector<uint64_t> by_program(programs.size());
  const analysis::CostModel cost(sym, features_);
  analysis::CostTally tally(programs.size());
  analysis::CostCache cost_cache;
  std::vector<analysis::SymbolizedFrame> chain;
  profile::Charge charge;
  // Keyed by views into the Symbolizer, copied into the interval below.
  std::map<std::pair<std::string_view, std::string_view>, SymbolSample> by_symbol;
  for (size_t off = 0; off < samples_.size();) {
    BPFPROF_ASSIGN_OR_RETURN(perf::RecordView r, perf::record_at(samples_, off));
    off += r.header.size;
    auto s = perf::Sample::parse(r, layout);
    if (!s.ok()) continue;
    iv.samples++;
    const uint16_t mode = r.cpumode();
    if (mode != perf::kMiscKernel && mode != perf::kMiscUser) continue;  // guest, hypervisor
    const symbols::Frame f = sym.lookup(s->pid, s->ip, s->time, mode == perf::kMiscKernel);
    if (f.bpf_program != 0 && f.bpf_program <= by_program.size()) by_program[f.bpf_program - 1]++;
    if (!s->callchain.empty()) {
      analysis::symbolize_for_charge(sym, *s, mode, chain);
      if (cost.classify(chain, analysis::chain_truncated(*s), s->pid, s->time, cost_cache, charge,
                        nullptr) == analysis::CostOutcome::kCharged) {
        tally.add(charge, 1);
      }
    }
    SymbolSample& row = by_symbol[{f.symbol, f.dso}];
    row.kind = f.kind;
    row.samples++;
  }
  for (auto& [key, row] : by_symbol) {
    row.name = std::string(key.first);
    row.dso = std::string(key.second);
    iv.symbols.push_back(std::move(row));
  }
  cost_.symbolize_ms = ms_since(t0);
  tally.self = by_program;
  tally.finish();

  const analysis::AttachIndex attach = analysis::attach_index(features_);
  std::vector<uint32_t> loaded;
  for (size_t i = 0; i < programs.size(); i++) {
    const symbols::BpfProgram& p = programs[i];
    const bool alive = p.load_time <= end && (!p.unload_time || *p.unload_time >= start);
    if (!alive && by_program[i] == 0) continue;
    ProgramSample& s = iv.programs.emplace_back(
        ProgramSample{p.id, p.name, bpf::tag_hex(p.tag), by_program[i], p.unload_time.has_value(),
                      analysis::program_owner(sym, features_, p, nullptr)});
    s.total_samples = tally.total(i);
    if (auto it = attach.find(p.id); it != attach.end()) s.attach_points = it->second;
    s.attach = analysis::program_attach(features_, attach, p.id);
    if (!p.unload_time) loaded.push_back(p.id);
  }
  if (run_stats()) iv.runs = read_runs(loaded);

  iv.lost = lost_;
  lost_ = 0;
  samples_.clear();
  interval_start_ns_ = end;
  return iv;
}

}  // namespace bpfprof::top
