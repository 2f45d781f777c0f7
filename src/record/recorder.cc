// SPDX-License-Identifier: Apache-2.0
#include "record/recorder.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "bpf/query.h"
#include "perf/event_open.h"
#include "record/attach_points.h"
#include "record/capture.h"
#include "record/capture_enricher.h"
#include "record/event_set.h"
#include "record/output_file.h"
#include "record/program_sections.h"
#include "record/signals.h"
#include "record/synthesize.h"
#include "record/workload.h"

namespace bpfprof::record {
namespace {

constexpr uint32_t kEnricherPages = 16;

// The sampling event: -e as given, else hardware cycles with a software
// fallback decided when opening (see open_events).
Result<perf::EventSpec> choose_event(const RecordOptions& o) {
  auto spec = perf::parse_event(o.event.value_or("cycles"));
  if (!spec.ok()) {
    return make_error(Errc::kInvalidArgument,
                      fmt::format("unknown event '{}' (supported: {})", o.event.value_or(""),
                                  perf::supported_events()));
  }
  return spec;
}

bool no_pmu(const Error& e) {
  return e.sys_errno == ENOENT || e.sys_errno == ENODEV || e.sys_errno == EOPNOTSUPP ||
         e.sys_errno == ENXIO;
}

// Every thread of `pid` now; later threads are followed through inherit.
Result<std::vector<pid_t>> threads_of(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), &::closedir);
  if (!d) return make_error(Errc::kNotFound, fmt::format("-p {}: no such process", pid));
  std::vector<pid_t> tids;
  while (dirent* e = ::readdir(d.get())) {
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9') tids.push_back(std::atoi(e->d_name));
  }
  if (tids.empty()) tids.push_back(pid);
  return tids;
}

struct Setup {
  perf::EventSpec spec;
  perf_event_attr sampling{};
  perf_event_attr sideband{};
};

// Whether the file names cgroups (CGROUP records, the existing ones
// synthesized at start): for --cgroup's samples, and for the cgroups of the
// programs' loaders the in-kernel capture reads (a record per cgroup made).
bool names_cgroups(const RecordOptions& o) { return o.cgroup || o.enrich == EnrichMode::kInKernel; }

Setup make_attrs(const RecordOptions& o, const perf::EventSpec& spec) {
  const auto kPageSize = static_cast<uint32_t>(::sysconf(_SC_PAGESIZE));
  Setup s;
  s.spec = spec;
  perf::SamplingConfig sc;
  sc.event = spec;
  sc.period = o.period;
  sc.freq = o.period ? std::nullopt : std::optional(o.frequency.value_or(kDefaultFrequency));
  sc.callchain = o.callchain || o.kernel_callchain;
  sc.user_callchain = o.callchain;
  sc.inherit = !o.samples_system_wide();
  sc.enable_on_exec = !o.samples_system_wide() && !o.command.empty();
  sc.cgroup = o.cgroup;
  // Wake at a quarter full: a pass per wake-up, far from overflowing.
  sc.wakeup_watermark = static_cast<uint32_t>(o.mmap_pages * kPageSize / 4);
  s.sampling = perf::make_sampling_attr(sc);
  perf::SidebandConfig sb;
  sb.wakeup_watermark = static_cast<uint32_t>(o.sideband_pages * kPageSize / 4);
  sb.cgroup = names_cgroups(o);
  s.sideband = perf::make_sideband_attr(sb, s.sampling.sample_type);
  return s;
}

Result<EventSet> open_events(const RecordOptions& o, const std::vector<int>& cpus,
                             const std::vector<int>& online, const std::vector<pid_t>& tids,
                             Setup& setup, const RecordSink& sink) {
  EventSet::Config config;
  config.cpus = cpus;
  config.sideband_cpus = online;
  config.sample_tids = tids;
  config.sampling_pages = o.mmap_pages;
  config.sideband_pages = o.sideband_pages;
  config.sampling = setup.sampling;
  config.sideband = setup.sideband;
  auto events = EventSet::open(config);
  if (events.ok() || o.event || !no_pmu(events.error())) return events;
  if (sink.notice) sink.notice("no hardware PMU, sampling cpu-clock");
  BPFPROF_ASSIGN_OR_RETURN(auto spec, perf::parse_event("cpu-clock"));
  setup = make_attrs(o, spec);
  config.sampling = setup.sampling;
  return EventSet::open(config);
}

std::set<uint32_t> live_prog_loads(EventSet& events) {
  std::set<uint32_t> ids;
  for (CpuRing& r : events.sideband_rings()) collect_prog_load_ids(r.ring.peek(), ids);
  return ids;
}

// Where BPF_PROG_INFO / BPF_BTF entries are handed to the file as they are
// learned (synthesis at start, the in-kernel capture or the enricher during
// the recording): into the data as in-stream records, so a killed
// recorder's file keeps them. The feature sections at close hold them all
// again, for perf.
Status hand_to_writer(perfdata::FileWriter& writer, const std::vector<bpf::ProgInfo>& infos,
                      const std::vector<bpf::BtfBlob>& btfs) {
  if (!infos.empty()) {
    BPFPROF_TRY(writer.append_in_stream(perfdata::kFeatBpfProgInfo,
                                        perfdata::encode_bpf_prog_info(infos)));
  }
  if (!btfs.empty()) {
    BPFPROF_TRY(writer.append_in_stream(perfdata::kFeatBpfBtf, perfdata::encode_bpf_btf(btfs)));
  }
  return ok_status();
}

// Writes everything that describes the world before recording, then FINISHED_INIT.
Result<BpfSynthesis> write_initial_state(perfdata::FileWriter& writer, EventSet& events,
                                         size_t trailer, const KallsymsScan& kallsyms,
                                         bool cgroups, bool cgroup_samples,
                                         const std::optional<Cgroup2Mount>& mount,
                                         const RecordSink& sink) {
  SynthBuffer synth(trailer);
  auto flush = [&]() -> Status {
    BPFPROF_TRY(writer.append(synth.bytes()));
    synth.clear();
    return ok_status();
  };
  if (auto s = synthesize_kernel(synth, kallsyms.text); !s.ok() && sink.notice) {
    sink.notice("no kernel map: " + s.error().to_string());
  }
  BPFPROF_ASSIGN_OR_RETURN(
      BpfSynthesis bpf,
      synthesize_bpf(synth, kallsyms.bpf, [&] { return live_prog_loads(events); }));
  BPFPROF_TRY(flush());
  if (cgroups) {
    // Cgroups created from here on come as CGROUP records of the side-band
    // event; one created during this walk may be described twice (same id
    // and path).
    if (!mount) {
      if (sink.notice && cgroup_samples) {
        sink.notice("--cgroup: no cgroup v2 hierarchy mounted: cgroups are unnamed");
      }
    } else {
      BPFPROF_TRY(synthesize_cgroups(synth, *mount, flush));
      BPFPROF_TRY(flush());
    }
  }
  BPFPROF_TRY(synthesize_threads(synth, flush));
  synth.header_only(perf::kRecordFinishedInit);
  BPFPROF_TRY(flush());
  BPFPROF_TRY(writer.finish_round());
  return bpf;
}

}  // namespace

Result<RecordStats> record(const RecordOptions& o, const RecordSink& sink) {
  BPFPROF_TRY(validate(o));
  BPFPROF_ASSIGN_OR_RETURN(perf::EventSpec spec, choose_event(o));
  BPFPROF_ASSIGN_OR_RETURN(const std::vector<int> online, perf::online_cpus());
  const std::vector<int> cpus = o.cpus.empty() ? online : o.cpus;

  BPFPROF_ASSIGN_OR_RETURN(SignalGuard signals, SignalGuard::block_stop_signals());
  std::optional<Workload> workload;
  std::vector<pid_t> tids;
  UniqueFd target_pidfd;
  if (!o.command.empty()) {
    BPFPROF_ASSIGN_OR_RETURN(Workload w, Workload::fork_held(o.command, signals.previous_mask()));
    workload.emplace(std::move(w));
    if (!o.samples_system_wide()) tids.push_back(workload->pid());
  } else if (o.pid) {
    BPFPROF_ASSIGN_OR_RETURN(tids, threads_of(*o.pid));
    target_pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, *o.pid, 0)));
  }

  Setup setup = make_attrs(o, spec);
  UniqueFd stats_fd;
  uint64_t stats_on_ns = 0;
  if (o.bpf_stats) {
    auto fd = bpf::enable_run_stats();
    if (!fd.ok()) return explain_bpf_error(std::move(fd).error().with_context("--bpf-stats"));
    stats_fd = std::move(fd).value();
    stats_on_ns = monotonic_ns();
  }
  // The capture attaches before any event opens, so every PROG_LOAD the
  // file will carry came after it; where it cannot run, the user-space
  // enricher does the work and the file says why.
  std::unique_ptr<Capture> capture;
  std::string capture_refused = "not tried (--enrich=user)";
  int capture_errno = -1;
  if (o.enrich == EnrichMode::kInKernel) {
    CaptureConfig cc;
    cc.ring_bytes = o.capture_ring_bytes;
    auto c = Capture::start(cc);
    if (c.ok()) {
      capture = std::move(c).value();
      capture_refused.clear();
      capture_errno = 0;
    } else {
      capture_refused = c.error().to_string();
      capture_errno = c.error().sys_errno ? c.error().sys_errno : EINVAL;
    }
  }
  // Otherwise the enricher's events open first, so every PROG_LOAD the file
  // will carry is also seen by the enricher. With capture, it only polls
  // run statistics (if asked for).
  EnricherConfig ec;
  ec.cpus = online;
  ec.sample_type = setup.sampling.sample_type;
  ec.pages = kEnricherPages;
  ec.sched = o.enricher_sched;
  ec.per_cpu = o.enricher_per_cpu;
  ec.run_stats = o.bpf_stats;
  ec.watch_loads = !capture;
  BPFPROF_ASSIGN_OR_RETURN(auto enricher, Enricher::start(ec));
  BPFPROF_ASSIGN_OR_RETURN(EventSet events, open_events(o, cpus, online, tids, setup, sink));
  BPFPROF_ASSIGN_OR_RETURN(perf::SampleLayout layout, perf::SampleLayout::from_attr(setup.sampling));
  std::unique_ptr<CaptureEnricher> in_kernel;
  if (capture) {
    BPFPROF_ASSIGN_OR_RETURN(perf::SampleLayout sb_layout,
                             perf::SampleLayout::from_attr(setup.sideband));
    in_kernel = std::make_unique<CaptureEnricher>(std::move(capture), sb_layout);
  }

  std::vector<perfdata::AttrEntry> attrs(2);
  attrs[0].attr = setup.sampling;
  attrs[0].name = event_name_with_modifiers(setup.spec.name, setup.sampling);
  attrs[0].ids = events.sampling_ids();
  attrs[1].attr = setup.sideband;
  attrs[1].name = event_name_with_modifiers("dummy", setup.sideband);
  attrs[1].ids = events.sideband_ids();
  BPFPROF_ASSIGN_OR_RETURN(OutputFile out, OutputFile::create(o.output, std::move(attrs)));
  perfdata::FileWriter& writer = out.writer();

  // Until the drain loop runs, a failure leaves nothing behind, except a
  // write error (a full disk): the file is kept, cut back to its last
  // complete round, with a valid header, as any later write error leaves it.
  auto before_start = [&](Error e) -> Error {
    if (writer.write_failed()) {
      perfdata::Features features = perfdata::host_features();
      features.cmdline = cmdline_with_exe(o.cmdline);
      Status closed = writer.close(features);
      return closed.ok() ? e : std::move(closed).error();
    }
    out.abandon();
    return e;
  };
  if (auto s = events.enable_sideband(); !s.ok()) return before_start(std::move(s).error());
  // One kallsyms pass (the kernel formats the whole file per read): kernel
  // map, [bpf] programs, and the text-symbol snapshot stored in the file.
  auto kallsyms = read_kallsyms();
  if (!kallsyms.ok()) kallsyms = KallsymsScan{kallsyms.error(), {}, {}};
  // Host, arch, event names and the kallsyms snapshot go into the data at
  // once (and into the sections at close): a killed recorder's file has them.
  // The snapshot is encoded once for both.
  std::vector<std::byte> kallsyms_packed;
  if (!kallsyms->text_symbols.empty()) {
    kallsyms_packed = perfdata::encode_kallsyms(kallsyms->text_symbols);
    kallsyms->text_symbols.clear();
  }
  {
    perfdata::Features early = perfdata::host_features();
    early.cmdline = cmdline_with_exe(o.cmdline);
    if (auto s = writer.append_in_stream(early); !s.ok()) return before_start(std::move(s).error());
    if (!kallsyms_packed.empty()) {
      if (auto s = writer.append_in_stream(perfdata::kFeatBpfprofKallsyms, kallsyms_packed); !s.ok())
        return before_start(std::move(s).error());
    }
  }
  // The cgroup v2 hierarchy, read once: cgroups synthesized, holders'
  // cgroups, cgroup attach points.
  std::optional<Cgroup2Mount> cgroup2;
  if (auto mountinfo = read_text_file("/proc/self/mountinfo"); mountinfo.ok()) {
    cgroup2 = find_cgroup2_mount(*mountinfo);
  }
  auto bpf = write_initial_state(writer, events, layout.id_hdr_size(), *kallsyms,
                                 names_cgroups(o), o.cgroup, cgroup2, sink);
  if (!bpf.ok()) return before_start(std::move(bpf).error());
  // Who holds the programs there before us, where every program is
  // attached: listed now, into the data at once.
  auto sections =
      ProgramSections::start(writer, bpf->synthesized, cgroup2, in_kernel.get(), sink);
  if (!sections.ok()) return before_start(std::move(sections).error());
  if (auto s = hand_to_writer(writer, bpf->infos, bpf->btfs); !s.ok())
    return before_start(std::move(s).error());
  if (auto s = writer.finish_round(); !s.ok()) return before_start(std::move(s).error());
  if (!setup.sampling.enable_on_exec) {
    if (auto s = events.enable_sampling(); !s.ok()) return before_start(std::move(s).error());
  }
  if (workload) {
    if (auto s = workload->start(); !s.ok()) return before_start(std::move(s).error());
  }

  // Each pass: what the capture (or the enricher) learned since the last
  // one goes into the data, then the round closes.
  auto end_pass = [&](bool copied) -> Status {
    std::vector<bpf::ProgInfo> infos;
    std::vector<bpf::BtfBlob> btfs;
    std::vector<perfdata::AttachEntry> links;
    std::vector<std::pair<uint32_t, uint64_t>> loaders;
    if (in_kernel) {
      in_kernel->take_learned(infos, btfs);
      in_kernel->take_attach(links);
      in_kernel->take_loader_cgroups(loaders);
    }
    enricher->take_learned(infos, btfs);
    BPFPROF_TRY(hand_to_writer(writer, infos, btfs));
    bool learned = !links.empty() || !loaders.empty();
    BPFPROF_TRY(sections->add_attach(std::move(links)));
    BPFPROF_TRY(sections->add_loaders(std::move(loaders)));
    const uint64_t now = monotonic_ns();
    sections->saw_loaded(infos, now);
    BPFPROF_ASSIGN_OR_RETURN(const bool tc_found, sections->relist_tc(now));
    learned = learned || tc_found;
    if (copied || !infos.empty() || !btfs.empty() || learned) return writer.finish_round();
    return ok_status();
  };
  DrainLoop loop(events, layout, [&](Bytes b) { return writer.append(b); }, end_pass);
  if (in_kernel) {
    PassHooks hooks;
    hooks.before_sideband_copy = [&](perf::RingBuffer& r) { in_kernel->saw_sideband(r); };
    hooks.after_pass = [&] { return in_kernel->after_pass(); };
    hooks.wake_fd = in_kernel->wake_fd();
    loop.set_hooks(std::move(hooks));
  }
  DrainConfig dc;
  dc.duration_s = o.duration_s;
  dc.signal_fd = signals.fd();
  dc.workload_pidfd = workload ? workload->pidfd() : -1;
  dc.target_pidfd = target_pidfd.get();
  dc.progress = sink.progress;
  const uint64_t t0 = monotonic_ns();
  auto stop = loop.run(dc);
  events.disable_all();
  Status drained = stop.ok() ? loop.pass() : ok_status();
  const uint64_t t1 = monotonic_ns();
  if (in_kernel) in_kernel->stop();
  enricher->stop();
  // The final values are read: the statistics go off (they cost every run).
  stats_fd.reset();
  const uint64_t stats_off_ns = o.bpf_stats ? monotonic_ns() : 0;

  // Attached during the recording and still there, listed before the
  // workload goes.
  Status listed = sections->list_at_end();
  RecordStats stats;
  if (workload) stats.workload_status = workload->terminate_and_reap();
  const DrainCounters& c = loop.counters();
  perfdata::Features features = perfdata::host_features();
  features.cmdline = cmdline_with_exe(o.cmdline);
  features.first_sample_time = c.first_sample_time;
  features.last_sample_time = c.last_sample_time;
  if (!kallsyms_packed.empty()) {
    features.other[perfdata::kFeatBpfprofKallsyms] = std::move(kallsyms_packed);
  }
  // What enriched the programs loaded during the recording.
  EnrichmentStats enrichment = in_kernel ? in_kernel->stats() : enricher->stats();
  enrichment.capture_refused = capture_refused;
  enrichment.capture_errno = capture_errno;
  std::map<uint32_t, bpf::ProgInfo> infos =
      std::move(in_kernel ? in_kernel->infos() : enricher->infos());
  std::map<uint32_t, bpf::BtfBlob> btfs = std::move(in_kernel ? in_kernel->btfs() : enricher->btfs());
  // Programs that name their point without a link: `syscall`, `test_run only`.
  Status named = sections->name_unlinked(bpf->infos, infos, enrichment.programs);
  merge_prog_infos(infos, std::move(bpf->infos));
  merge_btfs(btfs, std::move(bpf->btfs));
  std::set<uint32_t> stored;
  for (auto& [id, info] : infos) {
    stored.insert(id);
    features.bpf_prog_info.push_back(std::move(info));
  }
  features.enrichment = enrichment_section(enrichment, bpf->synthesized, stored);
  sections->move_into(features);
  if (o.bpf_stats) {
    perfdata::RunStatsSection rs;
    rs.poll_interval_ns = kRunStatsPollNs;
    rs.enabled_ns = stats_on_ns;
    rs.disabled_ns = stats_off_ns;
    RunStatsTable table;
    // Programs loaded during the recording start at zero at their load; the
    // poller's values follow (with capture, it sees them only at its next poll).
    if (in_kernel) {
      for (const EnrichedProgram& p : enrichment.programs) {
        if (p.enriched) table.saw(p.id, p.load_time_ns, {}, true);
      }
    }
    table.merge(enricher->run_stats());
    rs.programs = table.entries();
    features.run_stats = std::move(rs);
  }
  for (auto& [id, btf] : btfs) features.bpf_btf.push_back(std::move(btf));
  Status closed = writer.close(features);
  if (!stop.ok()) return std::move(stop).error();
  if (!drained.ok()) return std::move(drained).error();
  if (!closed.ok()) return std::move(closed).error();
  if (!listed.ok()) return std::move(listed).error();
  if (!named.ok()) return std::move(named).error();

  stats.event_name = setup.spec.name;
  stats.samples = c.samples;
  stats.lost = c.lost + c.lost_sideband + c.lost_samples;
  stats.lost_sideband = c.lost_sideband;
  stats.throttles = c.throttles;
  stats.records = c.records;
  stats.first_sample_time = c.first_sample_time;
  stats.last_sample_time = c.last_sample_time;
  stats.enrichment = std::move(enrichment);
  // Programs: those synthesized, plus those whose PROG_LOAD is in the stream.
  std::set<uint32_t> synthesized(bpf->synthesized.begin(), bpf->synthesized.end());
  std::set<uint32_t> live(bpf->live.begin(), bpf->live.end());
  for (const EnrichedProgram& p : stats.enrichment.programs) {
    if (!synthesized.count(p.id)) live.insert(p.id);
  }
  stats.bpf_synthesized = synthesized.size();
  stats.bpf_loaded_live = live.size();
  for (const bpf::ProgInfo& p : features.bpf_prog_info) {
    if (synthesized.count(p.id()) || live.count(p.id())) stats.bpf_enriched++;
  }
  stats.bpf_gone = bpf->gone + stats.enrichment.gone();
  stats.trampolines = bpf->trampolines;
  stats.stop_reason = *stop;
  stats.stop_signal = loop.stop_signal();
  stats.elapsed_s = static_cast<double>(t1 - t0) / 1e9;
  stats.output = o.output;
  struct stat st{};
  if (::stat(o.output.c_str(), &st) == 0) stats.file_bytes = static_cast<uint64_t>(st.st_size);
  return stats;
}

}  // namespace bpfprof::record
