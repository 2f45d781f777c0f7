// SPDX-License-Identifier: Apache-2.0
// The recording's first phase: the workload held, the capture or the
// enricher started, the events opened on every CPU, the file created.
#include <dirent.h>
#include <fmt/format.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "bpf/query.h"
#include "perf/event_open.h"
#include "record/phases.h"

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

// What the options ask to sample, and where.
EventRequest event_request(const RecordOptions& o, const perf::EventSpec& spec,
                           const std::vector<int>& online, const std::vector<pid_t>& tids) {
  EventRequest r;
  r.sampling.event = spec;
  r.sampling.period = o.period;
  r.sampling.freq =
      o.period ? std::nullopt : std::optional(o.frequency.value_or(kDefaultFrequency));
  r.sampling.callchain = o.callchain || o.kernel_callchain;
  r.sampling.user_callchain = o.callchain;
  r.sampling.inherit = !o.samples_system_wide();
  r.sampling.enable_on_exec = !o.samples_system_wide() && !o.command.empty();
  r.sampling.cgroup = o.cgroup;
  r.fall_back = !o.event;
  r.sideband.cgroup = names_cgroups(o);
  r.set.cpus = o.cpus.empty() ? online : o.cpus;
  r.set.sideband_cpus = online;
  r.set.sample_tids = tids;
  r.set.sampling_pages = o.mmap_pages;
  r.set.sideband_pages = o.sideband_pages;
  return r;
}

}  // namespace

bool names_cgroups(const RecordOptions& o) { return o.cgroup || o.enrich == EnrichMode::kInKernel; }

Result<std::unique_ptr<Recorder>> Recorder::open(const RecordOptions& o, const RecordSink& sink) {
  BPFPROF_TRY(validate(o));
  BPFPROF_ASSIGN_OR_RETURN(perf::EventSpec spec, choose_event(o));
  BPFPROF_ASSIGN_OR_RETURN(std::vector<int> online, perf::online_cpus());
  // SIGUSR2 switches with --switch-output=signal; by time or size it is
  // ignored, as perf does, rather than killing the recording.
  BPFPROF_ASSIGN_OR_RETURN(SignalGuard signals,
                           SignalGuard::block_stop_signals(o.switch_output.has_value()));
  std::unique_ptr<Recorder> r(new Recorder(o, sink, std::move(signals)));
  r->online_ = std::move(online);
  if (!o.command.empty()) {
    BPFPROF_ASSIGN_OR_RETURN(Workload w,
                             Workload::fork_held(o.command, r->signals_.previous_mask()));
    r->workload_.emplace(std::move(w));
    if (!o.samples_system_wide()) r->tids_.push_back(r->workload_->pid());
  } else if (o.pid) {
    BPFPROF_ASSIGN_OR_RETURN(r->tids_, threads_of(*o.pid));
    r->target_pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, *o.pid, 0)));
  }
  EventRequest request = event_request(o, spec, r->online_, r->tids_);
  if (o.bpf_stats) {
    auto fd = bpf::enable_run_stats();
    if (!fd.ok()) return bpf::explain_bpf_error(std::move(fd).error().with_context("--bpf-stats"));
    r->stats_fd_ = std::move(fd).value();
    r->stats_on_ns_ = monotonic_ns();
  }
  // The sample type does not depend on the event (a fallback keeps it).
  BPFPROF_TRY(r->start_capture_or_enricher(perf::make_sampling_attr(request.sampling).sample_type));
  BPFPROF_ASSIGN_OR_RETURN(OpenedEvents events, open_events(std::move(request), sink.notice));
  r->events_.emplace(std::move(events));
  BPFPROF_ASSIGN_OR_RETURN(perf::SampleLayout layout,
                           perf::SampleLayout::from_attr(r->events_->sampling));
  r->layout_.emplace(layout);
  if (r->capture_) {
    BPFPROF_ASSIGN_OR_RETURN(perf::SampleLayout sb_layout,
                             perf::SampleLayout::from_attr(r->events_->sideband));
    r->in_kernel_ = std::make_unique<CaptureEnricher>(std::move(r->capture_), sb_layout);
  }
  BPFPROF_TRY(r->create_file(true));
  if (o.switch_output) {
    auto files = SwitchedFiles::open(o.output, o.switch_max_files);
    if (!files.ok()) return r->abandon(std::move(files).error());
    r->switched_.emplace(std::move(files).value());
  }
  return r;
}

Status Recorder::start_capture_or_enricher(uint64_t sample_type) {
  // The capture attaches before any event opens, so every PROG_LOAD the
  // file will carry came after it; where it cannot run, the user-space
  // enricher does the work and the file says why.
  if (o_.enrich == EnrichMode::kInKernel) {
    capture::CaptureConfig cc;
    cc.ring_bytes = o_.capture_ring_bytes;
    auto c = capture::Capture::start(cc);
    if (c.ok()) {
      capture_ = std::move(c).value();
      capture_refused_.clear();
      capture_errno_ = 0;
    } else {
      capture_refused_ = c.error().to_string();
      capture_errno_ = c.error().sys_errno ? c.error().sys_errno : EINVAL;
    }
  }
  // Otherwise the enricher's events open first, so every PROG_LOAD the file
  // will carry is also seen by the enricher. With capture, it only polls
  // run statistics (if asked for).
  EnricherConfig ec;
  ec.cpus = online_;
  ec.sample_type = sample_type;
  ec.pages = kEnricherPages;
  ec.sched = o_.enricher_sched;
  ec.per_cpu = o_.enricher_per_cpu;
  ec.run_stats = o_.bpf_stats;
  ec.watch_loads = !capture_;
  BPFPROF_ASSIGN_OR_RETURN(enricher_, Enricher::start(ec));
  return ok_status();
}

Status Recorder::create_file(bool first) {
  std::vector<perfdata::AttrEntry> attrs(2);
  attrs[0].attr = events_->sampling;
  attrs[0].name = event_name_with_modifiers(events_->spec.name, events_->sampling);
  attrs[0].ids = events_->events.sampling_ids();
  attrs[1].attr = events_->sideband;
  attrs[1].name = event_name_with_modifiers("dummy", events_->sideband);
  attrs[1].ids = events_->events.sideband_ids();
  BPFPROF_ASSIGN_OR_RETURN(OutputFile out, OutputFile::create(o_.output, std::move(attrs), first));
  out_.emplace(std::move(out));
  if (o_.compression_level) {
    // What perf states as mmap_len: the sampling ring's mapping, header page
    // included; no COMPRESSED record decompresses to more.
    const auto mmap_len = static_cast<uint32_t>((o_.mmap_pages + 1) * ::sysconf(_SC_PAGESIZE));
    BPFPROF_TRY(out_->writer().enable_compression(*o_.compression_level, mmap_len));
  }
  return ok_status();
}

}  // namespace bpfprof::record
