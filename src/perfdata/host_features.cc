// SPDX-License-Identifier: Apache-2.0
// host_features(): what perf record writes about the recording host.
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "base/build_info.h"
#include "base/text_file.h"
#include "perf/event_open.h"
#include "perfdata/features.h"

namespace bpfprof::perfdata {
namespace {

// "0-3,8-11" -> 12: perf's nr_cpus_avail is the highest present cpu + 1.
std::optional<uint32_t> max_present_cpu_plus_one() {
  auto text = read_text_file("/sys/devices/system/cpu/present");
  if (!text.ok()) return std::nullopt;
  auto cpus = perf::parse_cpu_list(text->substr(0, text->find('\n')));
  if (!cpus.ok() || cpus->empty()) return std::nullopt;
  return static_cast<uint32_t>(cpus->back() + 1);  // sorted
}

}  // namespace

Features host_features() {
  Features f;
  struct utsname u {};
  if (uname(&u) == 0) {
    f.hostname = u.nodename;
    f.osrelease = u.release;
    f.arch = u.machine;
  }
  // perf writes its own version here; `perf report --header-only` prints it
  // as "perf version".
  f.version = build_info_line(build_info());
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online > 0) f.nr_cpus_online = static_cast<uint32_t>(online);
  f.nr_cpus_avail = max_present_cpu_plus_one();
  if (!f.nr_cpus_avail) {
    long conf = sysconf(_SC_NPROCESSORS_CONF);
    if (conf > 0) f.nr_cpus_avail = static_cast<uint32_t>(conf);
  }
  timespec res{};
  if (clock_getres(CLOCK_MONOTONIC, &res) == 0) {
    f.clockid_res_ns = static_cast<uint64_t>(res.tv_sec) * 1000000000ull +
                       static_cast<uint64_t>(res.tv_nsec);
  }
  return f;
}

}  // namespace bpfprof::perfdata
