// SPDX-License-Identifier: Apache-2.0
// perf_event_open, its ioctls, CPU lists and the attrs bpfprof opens. Every
// syscall failure names the operation, the event and the CPU, because the
// user sees one line and must know which of N per-CPU opens failed and why.
#include "perf/event_open.h"

#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <ctime>
#include <sstream>

#include "base/text_file.h"

namespace bpfprof::perf {
namespace {

struct NamedEvent {
  const char* name;
  uint32_t type;
  uint64_t config;
};

constexpr NamedEvent kEvents[] = {
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
    {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
    {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
};

// perf's default sampling frequency when neither -F nor -c is given.
constexpr uint64_t kDefaultFreq = 4000;

// "cycles", "dummy" or "type 4 config 0x3c" for error messages.
std::string describe(const perf_event_attr& attr) {
  if (attr.type == PERF_TYPE_SOFTWARE && attr.config == PERF_COUNT_SW_DUMMY) return "dummy";
  for (const NamedEvent& e : kEvents) {
    if (e.type == attr.type && e.config == attr.config) return e.name;
  }
  std::ostringstream out;
  out << "type " << attr.type << " config 0x" << std::hex << attr.config;
  return out.str();
}

Status ioctl_status(int fd, unsigned long request, unsigned long arg, const char* what) {
  if (::ioctl(fd, request, arg) == 0) return ok_status();
  return make_sys_error(std::string(what) + " (fd " + std::to_string(fd) + ")", errno);
}

bool parse_int(std::string_view s, int& out) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && p == end && out >= 0;
}

void set_monotonic_clock(perf_event_attr& attr) {
  // Timestamps in CLOCK_MONOTONIC line up with other tools and with tests.
  attr.use_clockid = 1;
  attr.clockid = CLOCK_MONOTONIC;
  attr.sample_id_all = 1;
}

}  // namespace

Result<UniqueFd> open_event(const perf_event_attr& attr, pid_t pid, int cpu, int group_fd,
                            unsigned long flags) {
  const long fd = ::syscall(SYS_perf_event_open, &attr, pid, cpu, group_fd, flags);
  if (fd < 0) {
    const int err = errno;
    return make_sys_error("perf_event_open(" + describe(attr) + ", pid " + std::to_string(pid) +
                              ", cpu " + std::to_string(cpu) + ")",
                          err);
  }
  return UniqueFd(static_cast<int>(fd));
}

Result<uint64_t> event_id(int fd) {
  uint64_t id = 0;
  if (::ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0) {
    return make_sys_error("ioctl PERF_EVENT_IOC_ID (fd " + std::to_string(fd) + ")", errno);
  }
  return id;
}

Status enable_event(int fd) {
  return ioctl_status(fd, PERF_EVENT_IOC_ENABLE, 0, "ioctl PERF_EVENT_IOC_ENABLE");
}

Status disable_event(int fd) {
  return ioctl_status(fd, PERF_EVENT_IOC_DISABLE, 0, "ioctl PERF_EVENT_IOC_DISABLE");
}

Status set_output(int fd, int target_fd) {
  return ioctl_status(fd, PERF_EVENT_IOC_SET_OUTPUT, static_cast<unsigned long>(target_fd),
                      "ioctl PERF_EVENT_IOC_SET_OUTPUT");
}

Result<std::vector<int>> online_cpus() {
  static constexpr const char* kPath = "/sys/devices/system/cpu/online";
  auto text = read_text_file(kPath);
  if (!text.ok()) return std::move(text).error();
  auto cpus = parse_cpu_list(text->substr(0, text->find('\n')));
  if (!cpus.ok()) return std::move(cpus).error().with_context(kPath);
  return cpus;
}

Result<std::vector<int>> parse_cpu_list(const std::string& list) {
  std::vector<int> cpus;
  std::string_view rest = list;
  while (!rest.empty() && (rest.back() == '\n' || rest.back() == ' ')) rest.remove_suffix(1);
  if (rest.empty()) return make_error(Errc::kInvalidArgument, "empty CPU list");
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t dash = item.find('-');
    int lo = 0, hi = 0;
    bool ok = parse_int(item.substr(0, dash), lo);
    hi = lo;
    if (ok && dash != std::string_view::npos) ok = parse_int(item.substr(dash + 1), hi);
    // Bound ranges so a typo like "0-99999999" cannot allocate gigabytes.
    if (!ok || hi < lo || hi - lo > 65535) {
      return make_error(Errc::kInvalidArgument,
                        "bad CPU list \"" + list + "\" at \"" + std::string(item) + "\"");
    }
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    if (comma != std::string_view::npos && rest.empty()) {
      return make_error(Errc::kInvalidArgument, "bad CPU list \"" + list + "\": trailing comma");
    }
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string supported_events() {
  std::string out;
  for (const NamedEvent& e : kEvents) {
    if (!out.empty()) out += ", ";
    out += e.name;
  }
  return out;
}

Result<EventSpec> parse_event(const std::string& name) {
  for (const NamedEvent& e : kEvents) {
    if (name == e.name) return EventSpec{name, e.type, e.config};
  }
  return make_error(Errc::kInvalidArgument,
                    "unknown event \"" + name + "\"; supported: " + supported_events());
}

perf_event_attr make_sampling_attr(const SamplingConfig& config) {
  perf_event_attr attr{};
  attr.size = kAttrSizeWritten;
  attr.type = config.event.type;
  attr.config = config.event.config;
  // -c wins over -F, as in perf.
  if (config.period) {
    attr.sample_period = *config.period;
  } else {
    attr.freq = 1;
    attr.sample_freq = config.freq.value_or(kDefaultFreq);
  }
  attr.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
                     PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
  if (config.callchain) attr.sample_type |= PERF_SAMPLE_CALLCHAIN;
  if (config.cgroup) attr.sample_type |= PERF_SAMPLE_CGROUP;
  // Kernel stacks alone cost the kernel no user-stack walk (no page faults,
  // no copies) and are all a BPF program's cost needs.
  attr.exclude_callchain_user = config.callchain && !config.user_callchain ? 1 : 0;
  set_monotonic_clock(attr);
  attr.disabled = 1;
  attr.inherit = config.inherit ? 1 : 0;
  attr.enable_on_exec = config.enable_on_exec ? 1 : 0;
  if (config.wakeup_watermark > 0) {
    attr.watermark = 1;
    attr.wakeup_watermark = config.wakeup_watermark;
  }
  return attr;
}

perf_event_attr make_sideband_attr(const SidebandConfig& config, uint64_t sample_type) {
  perf_event_attr attr{};
  attr.size = kAttrSizeWritten;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_DUMMY;
  // Same sample_type as the sampling attr: perf requires the trailer of every
  // attr in a file to put id/time at the same positions.
  attr.sample_type = sample_type;
  set_monotonic_clock(attr);
  attr.ksymbol = config.ksymbol ? 1 : 0;
  attr.bpf_event = config.bpf_event ? 1 : 0;
  // mmap2 only changes the record format of mmap; both bits are needed.
  attr.mmap = config.mmap2 ? 1 : 0;
  attr.mmap2 = config.mmap2 ? 1 : 0;
  attr.comm = config.comm ? 1 : 0;
  attr.comm_exec = config.comm ? 1 : 0;
  attr.task = config.task ? 1 : 0;
  attr.cgroup = config.cgroup ? 1 : 0;
  if (config.wakeup_events > 0) {
    attr.wakeup_events = config.wakeup_events;
  } else if (config.wakeup_watermark > 0) {
    attr.watermark = 1;
    attr.wakeup_watermark = config.wakeup_watermark;
  }
  return attr;
}

}  // namespace bpfprof::perf
