// SPDX-License-Identifier: Apache-2.0
// host_features(): what perf record writes about the recording host.
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/build_info.h"
#include "perfdata/features.h"

namespace bpfprof::perfdata {
namespace {

// "0-3,8-11" -> 12: perf's nr_cpus_avail is the highest present cpu + 1.
std::optional<uint32_t> max_present_cpu_plus_one() {
  std::ifstream in("/sys/devices/system/cpu/present");
  std::string list;
  if (!std::getline(in, list)) return std::nullopt;
  std::optional<uint32_t> best;
  std::stringstream ranges(list);
  std::string range;
  while (std::getline(ranges, range, ',')) {
    size_t dash = range.find('-');
    std::string last = dash == std::string::npos ? range : range.substr(dash + 1);
    char* end = nullptr;
    unsigned long v = std::strtoul(last.c_str(), &end, 10);
    if (end == last.c_str()) continue;
    best = std::max<uint32_t>(best.value_or(0), static_cast<uint32_t>(v + 1));
  }
  return best;
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
