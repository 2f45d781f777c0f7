// SPDX-License-Identifier: Apache-2.0
#include "record/enricher.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "bpf/query.h"
#include "perf/event_open.h"
#include "record/ring_copier.h"

namespace bpfprof::record {

uint64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

size_t EnrichmentStats::gone() const {
  return std::count_if(programs.begin(), programs.end(), [](const auto& p) { return p.gone; });
}

size_t EnrichmentStats::enriched() const {
  return std::count_if(programs.begin(), programs.end(), [](const auto& p) { return p.enriched; });
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
}  // namespace

uint64_t EnrichmentStats::median_hold_ns() const {
  auto h = hold_times(programs);
  return h.empty() ? 0 : h[h.size() / 2];
}

uint64_t EnrichmentStats::max_hold_ns() const {
  auto h = hold_times(programs);
  return h.empty() ? 0 : h.back();
}

Result<std::unique_ptr<Enricher>> Enricher::start(const std::vector<int>& cpus,
                                                  uint64_t sample_type, uint32_t pages) {
  std::unique_ptr<Enricher> e(new Enricher());
  perf::SidebandConfig config;
  config.ksymbol = false;
  config.mmap2 = false;
  config.comm = false;
  config.task = false;
  config.bpf_event = true;
  // Wake on every record (wakeup_events counts samples only, never side-band).
  config.wakeup_watermark = 1;
  const perf_event_attr attr = perf::make_sideband_attr(config, sample_type);
  BPFPROF_ASSIGN_OR_RETURN(e->layout_, perf::SampleLayout::from_attr(attr));
  std::vector<uint64_t> ids;
  BPFPROF_ASSIGN_OR_RETURN(e->rings_, open_per_cpu(attr, -1, cpus, pages, ids));
  for (CpuRing& r : e->rings_) BPFPROF_TRY(perf::enable_event(r.fd.get()));

  e->stop_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!e->stop_fd_.valid()) return make_sys_error("eventfd", errno);
  e->epoll_fd_.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!e->epoll_fd_.valid()) return make_sys_error("epoll_create1", errno);
  auto add = [&](int fd) -> Status {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (::epoll_ctl(e->epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
      return make_sys_error("epoll_ctl", errno);
    }
    return ok_status();
  };
  for (CpuRing& r : e->rings_) BPFPROF_TRY(add(r.fd.get()));
  BPFPROF_TRY(add(e->stop_fd_.get()));
  e->thread_ = std::thread([raw = e.get()] { raw->run(); });
  return e;
}

Enricher::~Enricher() { stop(); }

void Enricher::stop() {
  if (stopped_) return;
  stopped_ = true;
  uint64_t one = 1;
  (void)!::write(stop_fd_.get(), &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  for (CpuRing& r : rings_) (void)perf::disable_event(r.fd.get());
  drain();  // whatever arrived between the thread's last pass and disable
}

void Enricher::run() {
  epoll_event events[32];
  for (;;) {
    int n = ::epoll_wait(epoll_fd_.get(), events, 32, -1);
    if (n < 0 && errno != EINTR) return;
    bool stop = false;
    for (int i = 0; i < n; i++) {
      if (events[i].data.fd == stop_fd_.get()) stop = true;
    }
    drain();
    if (stop) return;
  }
}

void Enricher::drain() {
  for (CpuRing& r : rings_) {
    auto consumed = r.ring.for_each_record([&](const perf::RecordView& rec) {
      if (rec.header.type == perf::kRecordLost) {
        if (auto lost = perf::Lost::parse(rec, layout_); lost.ok()) stats_.lost += lost->lost;
        return;
      }
      if (rec.header.type != perf::kRecordBpfEvent) return;
      perf::RecordView fixed = rec;
      fixed.header.size = true_record_size(rec, layout_.id_hdr_size());
      fixed.bytes = rec.bytes.first(fixed.header.size);
      auto ev = perf::BpfEvent::parse(fixed, layout_);
      if (ev.ok() && ev->type == perf::kBpfEventProgLoad) on_prog_load(ev->id, ev->sample_id.time);
    });
    if (!consumed.ok()) stats_.errors++;
  }
}

void Enricher::on_prog_load(uint32_t id, uint64_t time) {
  EnrichedProgram p;
  p.id = id;
  p.load_time_ns = time;
  p.acquired_ns = monotonic_ns();
  // The reference first: the program may be unloaded at any moment.
  auto fd = bpf::prog_fd_by_id(id);
  if (!fd.ok()) {
    p.gone = fd.error().code == Errc::kNotFound;
    if (!p.gone) stats_.errors++;
    stats_.programs.push_back(p);
    return;
  }
  auto info = bpf::read_prog_info(fd->get());
  // The BTF while the program still pins it (once per BTF id), then let go.
  const uint32_t btf_id = info.ok() ? info->info.btf_id : 0;
  if (btf_id && !btfs_.count(btf_id) && !btf_missing_.count(btf_id)) {
    auto btf = bpf::read_btf(btf_id);
    if (btf.ok()) {
      btfs_.emplace(btf_id, std::move(btf).value());
    } else {
      btf_missing_.insert(btf_id);
    }
  }
  fd->reset();
  p.released_ns = monotonic_ns();
  if (!info.ok()) {
    stats_.errors++;
    stats_.programs.push_back(p);
    return;
  }
  // No names here: in the file they come from the kernel's KSYMBOL records.
  p.enriched = true;
  infos_.emplace(id, std::move(info).value());
  stats_.programs.push_back(p);
}

}  // namespace bpfprof::record
