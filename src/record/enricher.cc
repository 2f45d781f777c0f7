// SPDX-License-Identifier: Apache-2.0
#include "record/enricher.h"

#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <mutex>
#include <unordered_set>

#include "bpf/query.h"
#include "perf/event_open.h"

namespace bpfprof::record {

using perfdata::EnricherSched;

size_t EnrichmentStats::gone() const {
  return std::count_if(programs.begin(), programs.end(), [](const auto& p) { return p.gone; });
}

size_t EnrichmentStats::enriched() const {
  return std::count_if(programs.begin(), programs.end(), [](const auto& p) { return p.enriched; });
}

size_t EnrichmentStats::captured() const {
  return std::count_if(programs.begin(), programs.end(), [](const auto& p) { return p.captured; });
}

size_t EnrichmentStats::by_id() const {
  return std::count_if(programs.begin(), programs.end(),
                       [](const auto& p) { return p.by_id && p.enriched; });
}

namespace {

std::vector<uint64_t> hold_times(const std::vector<EnrichedProgram>& programs) {
  std::vector<uint64_t> out;
  for (const auto& p : programs) {
    if (p.released_ns) out.push_back(p.hold_ns());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Lowest real-time priority: above every SCHED_OTHER task, below the
// kernel's threaded interrupts (50) and anything an administrator raised.
constexpr int kFifoPriority = 1;

// Applies `want` to the calling thread, falling back silently where the
// kernel refuses (no CAP_SYS_NICE, RLIMIT_RTPRIO, a cgroup without RT
// budget); returns what it got.
EnricherSched apply_sched(EnricherSched want) {
  if (want == EnricherSched::kFifo) {
    sched_param sp{};
    sp.sched_priority = kFifoPriority;
    if (::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &sp) == 0) return EnricherSched::kFifo;
  }
  if (want != EnricherSched::kOther &&
      ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), -20) == 0) {
    return EnricherSched::kOtherNice;
  }
  return EnricherSched::kOther;
}

}  // namespace

uint64_t EnrichmentStats::median_hold_ns() const {
  auto h = hold_times(programs);
  return h.empty() ? 0 : h[h.size() / 2];
}

uint64_t EnrichmentStats::max_hold_ns() const {
  auto h = hold_times(programs);
  return h.empty() ? 0 : h.back();
}

// One enricher thread and the rings it reads. Its state is its own until
// stop() has joined it.
struct Enricher::Worker {
  struct Pending {
    EnrichedProgram program;
    UniqueFd fd;
  };

  std::vector<CpuRing> rings;
  perf::SampleLayout layout;
  UniqueFd epoll_fd;
  int pin_cpu = -1;
  EnricherSched want = EnricherSched::kFifo;
  EnricherSched got = EnricherSched::kOther;
  bool poller = false;  // polls run statistics (one worker does)
  bool run_stats = false;
  uint64_t poll_interval_ns = 0;
  std::thread thread;

  std::deque<Pending> pending;
  // Guarded by learned_mu with `got` and `stats`: a switch of output files
  // reads copies while the thread runs (gather_stats, gather_run_stats).
  std::vector<EnrichedProgram> programs;
  uint64_t lost = 0, errors = 0;
  // Kept in arrival order and put in maps by stop(): tree walks over a
  // thousand cold nodes per program showed in the enricher's profile.
  std::vector<bpf::ProgInfo> infos;
  std::vector<bpf::BtfBlob> btfs;
  std::unordered_set<uint32_t> btf_seen;  // read, or failed to read
  // Copies of what was read, handed to the writer by take_learned().
  mutable std::mutex learned_mu;
  std::vector<bpf::ProgInfo> learned_infos;
  std::vector<bpf::BtfBlob> learned_btfs;
  bpf::ReadBuffers buffers;  // the kernel writes infos and BTF here; copied out at size
  RunStatsTable stats;

  void run(int stop_fd);
  // Takes references for every PROG_LOAD in the rings, then reads their
  // infos one by one, taking new references between two reads.
  void react();
  void grab();
  void read_info(Pending& item);
};

void Enricher::Worker::run(int stop_fd) {
  if (pin_cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(pin_cpu, &set);
    (void)::pthread_setaffinity_np(::pthread_self(), sizeof set, &set);
  }
  {
    const EnricherSched applied = apply_sched(want);
    std::lock_guard<std::mutex> lock(learned_mu);
    got = applied;
  }
  uint64_t next_poll = 0;
  // A pass costs a few bpf() calls per loaded program: on a host with many
  // programs the interval stretches so polling stays near 1% of a CPU.
  auto poll = [&] {
    const uint64_t begin = monotonic_ns();
    RunStatsTable polled;
    polled.poll(false);
    {
      std::lock_guard<std::mutex> lock(learned_mu);
      stats.merge(polled);
    }
    const uint64_t end = monotonic_ns();
    next_poll = end + std::max(poll_interval_ns, (end - begin) * kRunStatsPollCostFactor);
  };
  if (poller) poll();
  epoll_event events[32];
  for (;;) {
    int timeout_ms = -1;
    if (poller) {
      const uint64_t now = monotonic_ns();
      timeout_ms = now >= next_poll ? 0 : static_cast<int>((next_poll - now) / 1'000'000 + 1);
    }
    int n = ::epoll_wait(epoll_fd.get(), events, 32, timeout_ms);
    if (n < 0 && errno != EINTR) return;
    bool stop = false;
    for (int i = 0; i < n; i++) {
      if (events[i].data.fd == stop_fd) stop = true;
    }
    react();
    if (stop) return;
    if (poller && monotonic_ns() >= next_poll) poll();
  }
}

void Enricher::Worker::react() {
  grab();
  while (!pending.empty()) {
    Pending item = std::move(pending.front());
    pending.pop_front();
    read_info(item);
    grab();
  }
}

void Enricher::Worker::grab() {
  for (CpuRing& r : rings) {
    auto consumed = r.ring.for_each_record([&](const perf::RecordView& rec) {
      if (rec.header.type == perf::kRecordLost) {
        if (auto l = perf::Lost::parse(rec, layout); l.ok()) {
          std::lock_guard<std::mutex> lock(learned_mu);
          lost += l->lost;
        }
        return;
      }
      if (rec.header.type != perf::kRecordBpfEvent) return;
      auto ev = perf::BpfEvent::parse(rec, layout);
      if (!ev.ok() || ev->type != perf::kBpfEventProgLoad) return;
      // The reference first, nothing else: the program may unload at any moment.
      EnrichedProgram p;
      p.id = ev->id;
      p.load_time_ns = ev->sample_id.time;
      p.acquired_ns = monotonic_ns();
      auto fd = bpf::prog_fd_by_id(p.id);
      if (fd.ok()) {
        pending.push_back({p, std::move(fd).value()});
        return;
      }
      p.gone = fd.error().code == Errc::kNotFound;
      std::lock_guard<std::mutex> lock(learned_mu);
      if (!p.gone) errors++;
      programs.push_back(p);
    });
    if (!consumed.ok()) {
      std::lock_guard<std::mutex> lock(learned_mu);
      errors++;
    }
  }
}

void Enricher::Worker::read_info(Pending& item) {
  EnrichedProgram& p = item.program;
  auto info = bpf::read_prog_info(item.fd.get(), buffers);
  // The BTF while the program still pins it (once per BTF id), then let go.
  const uint32_t btf_id = info.ok() ? info->info.btf_id : 0;
  if (btf_id && btf_seen.insert(btf_id).second) {
    auto btf = bpf::read_btf(btf_id, buffers);
    if (btf.ok()) {
      btfs.push_back(std::move(btf).value());
      std::lock_guard<std::mutex> lock(learned_mu);
      learned_btfs.push_back(btfs.back());
    }
  }
  item.fd.reset();
  p.released_ns = monotonic_ns();
  if (!info.ok()) {
    std::lock_guard<std::mutex> lock(learned_mu);
    errors++;
    programs.push_back(p);
    return;
  }
  // No names here: in the file they come from the kernel's KSYMBOL records.
  p.enriched = true;
  infos.push_back(std::move(info).value());
  std::lock_guard<std::mutex> lock(learned_mu);
  if (run_stats) {
    stats.saw(p.id, p.released_ns, {infos.back().info.run_cnt, infos.back().info.run_time_ns},
              true);
  }
  programs.push_back(p);
  learned_infos.push_back(infos.back());
}

Result<std::unique_ptr<Enricher>> Enricher::start(const EnricherConfig& config) {
  std::unique_ptr<Enricher> e(new Enricher());
  e->config_ = config;
  perf::SidebandConfig sb;
  sb.ksymbol = false;
  sb.mmap2 = false;
  sb.comm = false;
  sb.task = false;
  sb.bpf_event = true;
  // Wake on every record (wakeup_events counts samples only, never side-band).
  sb.wakeup_watermark = 1;
  const perf_event_attr attr = perf::make_sideband_attr(sb, config.sample_type);
  BPFPROF_ASSIGN_OR_RETURN(perf::SampleLayout layout, perf::SampleLayout::from_attr(attr));
  std::vector<uint64_t> ids;
  std::vector<CpuRing> rings;
  if (config.watch_loads) {
    BPFPROF_ASSIGN_OR_RETURN(rings, open_per_cpu(attr, -1, config.cpus, config.pages, ids));
    for (CpuRing& r : rings) BPFPROF_TRY(perf::enable_event(r.fd.get()));
  }

  e->stop_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!e->stop_fd_.valid()) return make_sys_error("eventfd", errno);
  // Without rings, only a poller of run statistics (if asked for).
  const size_t n_workers = !config.watch_loads ? (config.run_stats ? 1 : 0)
                           : config.per_cpu    ? rings.size()
                                               : 1;
  for (size_t i = 0; i < n_workers; i++) {
    auto w = std::make_unique<Worker>();
    w->layout = layout;
    w->want = config.sched;
    w->poller = config.run_stats && i == 0;
    w->run_stats = config.run_stats;
    w->poll_interval_ns = config.poll_interval_ns;
    w->epoll_fd.reset(::epoll_create1(EPOLL_CLOEXEC));
    if (!w->epoll_fd.valid()) return make_sys_error("epoll_create1", errno);
    e->workers_.push_back(std::move(w));
  }
  for (size_t i = 0; i < rings.size(); i++) {
    Worker& w = *e->workers_[config.per_cpu ? i : 0];
    if (config.per_cpu) w.pin_cpu = rings[i].cpu;
    w.rings.push_back(std::move(rings[i]));
  }
  auto add = [](int epoll_fd, int fd) -> Status {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) return make_sys_error("epoll_ctl", errno);
    return ok_status();
  };
  for (auto& w : e->workers_) {
    for (CpuRing& r : w->rings) BPFPROF_TRY(add(w->epoll_fd.get(), r.fd.get()));
    BPFPROF_TRY(add(w->epoll_fd.get(), e->stop_fd_.get()));
  }
  for (auto& w : e->workers_) {
    w->thread = std::thread([raw = w.get(), stop_fd = e->stop_fd_.get()] { raw->run(stop_fd); });
  }
  return e;
}

Enricher::~Enricher() { stop(); }

void Enricher::take_learned(std::vector<bpf::ProgInfo>& infos, std::vector<bpf::BtfBlob>& btfs) {
  for (auto& w : workers_) {
    std::lock_guard<std::mutex> lock(w->learned_mu);
    for (bpf::ProgInfo& i : w->learned_infos) infos.push_back(std::move(i));
    for (bpf::BtfBlob& b : w->learned_btfs) btfs.push_back(std::move(b));
    w->learned_infos.clear();
    w->learned_btfs.clear();
  }
}

EnrichmentStats Enricher::stats_so_far() const { return stopped_ ? stats_ : gather_stats(); }

RunStatsTable Enricher::run_stats_so_far() const {
  return stopped_ ? run_stats_ : gather_run_stats();
}

EnrichmentStats Enricher::gather_stats() const {
  EnrichmentStats s;
  s.threads = workers_.size();
  s.pinned = config_.per_cpu;
  s.sched = workers_.empty() ? EnricherSched::kOther : EnricherSched::kFifo;
  for (const auto& w : workers_) {
    std::lock_guard<std::mutex> lock(w->learned_mu);
    s.sched = std::min(s.sched, w->got);
    s.lost += w->lost;
    s.errors += w->errors;
    s.programs.insert(s.programs.end(), w->programs.begin(), w->programs.end());
  }
  std::sort(s.programs.begin(), s.programs.end(),
            [](const auto& a, const auto& b) { return a.acquired_ns < b.acquired_ns; });
  return s;
}

RunStatsTable Enricher::gather_run_stats() const {
  RunStatsTable t;
  for (const auto& w : workers_) {
    std::lock_guard<std::mutex> lock(w->learned_mu);
    t.merge(w->stats);
  }
  return t;
}

void Enricher::stop() {
  if (stopped_) return;
  stopped_ = true;
  // Never read: the eventfd stays readable, so every worker sees it.
  uint64_t one = 1;
  (void)!::write(stop_fd_.get(), &one, sizeof one);
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
  for (auto& w : workers_) {
    for (CpuRing& r : w->rings) (void)perf::disable_event(r.fd.get());
    w->react();  // whatever arrived between the thread's last pass and disable
    // An id in two workers (a BTF shared by programs loaded on two CPUs): the first.
    for (bpf::ProgInfo& info : w->infos) infos_.emplace(info.id(), std::move(info));
    for (bpf::BtfBlob& btf : w->btfs) btfs_.emplace(btf.id, std::move(btf));
    w->infos.clear();
    w->btfs.clear();
  }
  stats_ = gather_stats();
  run_stats_ = gather_run_stats();
  // Programs still loaded: their final values, while the statistics are on.
  if (config_.run_stats) run_stats_.poll(true);
}

perfdata::EnrichmentSection enrichment_section(const EnrichmentStats& stats,
                                               const std::vector<uint32_t>& synthesized,
                                               const std::set<uint32_t>& stored) {
  using Entry = perfdata::EnrichedProgramEntry;
  perfdata::EnrichmentSection s;
  s.path = stats.in_kernel ? perfdata::EnrichmentPath::kInKernel
                           : perfdata::EnrichmentPath::kUserSpace;
  s.sched = stats.sched;
  s.in_kernel_errno = stats.capture_errno;
  s.capture_refused = stats.capture_refused;
  s.capture_lost = stats.capture_lost;
  s.threads = static_cast<uint16_t>(stats.threads);
  s.pinned = stats.pinned;
  s.lost = stats.lost;
  s.errors = stats.errors;
  std::set<uint32_t> listed;
  for (uint32_t id : synthesized) {
    Entry e;
    e.id = id;
    e.flags = Entry::kSynthesized | (stored.count(id) ? Entry::kStored : 0);
    if (listed.insert(id).second) s.programs.push_back(e);
  }
  for (const EnrichedProgram& p : stats.programs) {
    // A program loaded while synthesis enumerated is both: one entry.
    if (!listed.insert(p.id).second) continue;
    Entry e;
    e.id = p.id;
    e.load_ns = p.load_time_ns;
    e.acquired_ns = p.acquired_ns;
    e.hold_ns = p.hold_ns();
    if (p.captured) e.flags |= Entry::kCaptured;
    if (p.by_id) e.flags |= Entry::kById;
    if (stored.count(p.id)) {
      e.flags |= Entry::kStored;
    } else if (p.gone) {
      e.flags |= Entry::kGone;
    }
    s.programs.push_back(e);
  }
  return s;
}

}  // namespace bpfprof::record
