// SPDX-License-Identifier: Apache-2.0
#include "record/event_set.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "base/text_file.h"
#include "perf/event_open.h"

namespace bpfprof::record {
namespace {

Result<UniqueFd> open_one(const perf_event_attr& attr, pid_t pid, int cpu, bool cpu_wide) {
  auto fd = perf::open_event(attr, pid, cpu);
  if (!fd.ok()) {
    // A refusal is about privileges, not this CPU: say only what is missing.
    if (fd.error().code == Errc::kPermission) {
      return explain_perf_open_error(std::move(fd).error(), cpu_wide);
    }
    return std::move(fd).error().with_context(fmt::format("cpu {}", cpu));
  }
  return fd;
}

// No PMU (VMs) shows as one of these errnos.
bool no_pmu(const Error& e) {
  return e.sys_errno == ENOENT || e.sys_errno == ENODEV || e.sys_errno == EOPNOTSUPP ||
         e.sys_errno == ENXIO;
}

}  // namespace

Result<OpenedEvents> open_events(EventRequest r,
                                 const std::function<void(std::string_view)>& notice) {
  const auto page = static_cast<uint32_t>(::sysconf(_SC_PAGESIZE));
  // Wake at a quarter full: a pass per wake-up, far from overflowing.
  r.sampling.wakeup_watermark = r.set.sampling_pages * page / 4;
  r.sideband.wakeup_watermark = r.set.sideband_pages * page / 4;
  auto make_attrs = [&r] {
    r.set.sampling = perf::make_sampling_attr(r.sampling);
    r.set.sideband = perf::make_sideband_attr(r.sideband, r.set.sampling.sample_type);
  };
  make_attrs();
  auto events = EventSet::open(r.set);
  if (!events.ok() && r.fall_back && no_pmu(events.error())) {
    if (notice) notice("no hardware PMU, sampling cpu-clock");
    BPFPROF_ASSIGN_OR_RETURN(r.sampling.event, perf::parse_event("cpu-clock"));
    make_attrs();
    events = EventSet::open(r.set);
  }
  if (!events.ok()) return std::move(events).error();
  return OpenedEvents{std::move(events).value(), r.sampling.event, r.set.sampling, r.set.sideband};
}

Error explain_perf_open_error(Error error, bool cpu_wide) {
  if (error.code != Errc::kPermission) return error;
  std::string paranoid = sysctl_value("/proc/sys/kernel/perf_event_paranoid");
  // CPU-wide events need paranoid <= 0, and every recording has them (the
  // side-band and the enricher follow BPF programs on all CPUs, also when
  // only one command is sampled); per-task kernel sampling needs <= 1.
  error.message = fmt::format("perf_event_open: {} \u2014 needs CAP_PERFMON (or root), or "
                              "kernel.perf_event_paranoid <= {} (now {}){}",
                              std::strerror(error.sys_errno ? error.sys_errno : EACCES),
                              cpu_wide ? 0 : 1, paranoid,
                              cpu_wide ? ": BPF program loads and unloads are followed on every "
                                         "CPU, whatever is sampled"
                                       : "");
  return error;
}

Result<std::vector<CpuRing>> open_per_cpu(const perf_event_attr& attr, pid_t pid,
                                          const std::vector<int>& cpus, uint32_t pages,
                                          std::vector<uint64_t>& ids) {
  std::vector<CpuRing> rings;
  rings.reserve(cpus.size());
  for (int cpu : cpus) {
    BPFPROF_ASSIGN_OR_RETURN(UniqueFd fd, open_one(attr, pid, cpu, pid == -1));
    BPFPROF_ASSIGN_OR_RETURN(uint64_t id, perf::event_id(fd.get()));
    auto ring = perf::RingBuffer::map(fd.get(), pages);
    if (!ring.ok() && ring.error().code == Errc::kPermission) {
      Error e = std::move(ring).error();
      e.message = fmt::format(
          "mmap of the perf ring buffers: {} \u2014 they exceed kernel.perf_event_mlock_kb "
          "(now {}) for this user: use a smaller -m, or CAP_IPC_LOCK (or root)",
          std::strerror(e.sys_errno ? e.sys_errno : EPERM),
          sysctl_value("/proc/sys/kernel/perf_event_mlock_kb"));
      return e;
    }
    if (!ring.ok()) {
      return std::move(ring).error().with_context(fmt::format("mmap ring of cpu {}", cpu));
    }
    ids.push_back(id);
    rings.push_back(CpuRing{cpu, std::move(fd), std::move(ring).value()});
  }
  return rings;
}

Result<EventSet> EventSet::open(const Config& config) {
  EventSet set;
  const bool all_tasks = config.sample_tids.empty();
  // Side-band first: it is live from open on, so nothing that happens while
  // the rest is set up goes unseen.
  BPFPROF_ASSIGN_OR_RETURN(set.sideband_, open_per_cpu(config.sideband, -1, config.sideband_cpus,
                                                        config.sideband_pages, set.sideband_ids_));
  if (all_tasks) {
    BPFPROF_ASSIGN_OR_RETURN(set.sampling_, open_per_cpu(config.sampling, -1, config.cpus,
                                                          config.sampling_pages, set.sampling_ids_));
    return set;
  }
  // Per task: the first task's event on each CPU owns the ring, the others
  // write into it (same CPU, so records stay time-ordered within a ring).
  BPFPROF_ASSIGN_OR_RETURN(set.sampling_,
                           open_per_cpu(config.sampling, config.sample_tids.front(), config.cpus,
                                        config.sampling_pages, set.sampling_ids_));
  for (size_t t = 1; t < config.sample_tids.size(); t++) {
    for (CpuRing& ring : set.sampling_) {
      auto fd = open_one(config.sampling, config.sample_tids[t], ring.cpu, false);
      if (!fd.ok()) {
        if (fd.error().sys_errno == ESRCH) break;  // the thread exited meanwhile
        return std::move(fd).error();
      }
      BPFPROF_ASSIGN_OR_RETURN(uint64_t id, perf::event_id(fd->get()));
      BPFPROF_TRY(perf::set_output(fd->get(), ring.fd.get()));
      set.sampling_ids_.push_back(id);
      set.redirected_.push_back(std::move(fd).value());
    }
  }
  return set;
}

Status EventSet::enable_sampling() {
  for (CpuRing& r : sampling_) BPFPROF_TRY(perf::enable_event(r.fd.get()));
  for (UniqueFd& fd : redirected_) BPFPROF_TRY(perf::enable_event(fd.get()));
  return ok_status();
}

Status EventSet::enable_sideband() {
  for (CpuRing& r : sideband_) BPFPROF_TRY(perf::enable_event(r.fd.get()));
  return ok_status();
}

void EventSet::disable_all() {
  for (CpuRing& r : sampling_) (void)perf::disable_event(r.fd.get());
  for (UniqueFd& fd : redirected_) (void)perf::disable_event(fd.get());
  for (CpuRing& r : sideband_) (void)perf::disable_event(r.fd.get());
}

}  // namespace bpfprof::record
