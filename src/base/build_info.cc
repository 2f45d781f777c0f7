// SPDX-License-Identifier: Apache-2.0
#include "base/build_info.h"

#include <bpf/libbpf.h>
#include <capstone/capstone.h>
#include <zstd.h>

#include <cstddef>

#ifndef BPFPROF_VERSION
#define BPFPROF_VERSION "unknown"
#endif

// Defined by the generated build_commit.cc (see CMakeLists.txt), which only
// the bpfprof binary links: a new HEAD then relinks that one binary instead
// of every test. Anything else reads "unknown".
extern "C" [[gnu::weak]] const char bpfprof_build_commit[];

// jemalloc's control call, present where the binary links it (the bpfprof
// binary, src/cli/malloc_conf.cc); null elsewhere.
extern "C" [[gnu::weak]] int mallctl(const char* name, void* oldp, size_t* oldlenp, void* newp,
                                     size_t newlen);

namespace bpfprof {

BuildInfo build_info() {
  BuildInfo info;
  info.version = BPFPROF_VERSION;
  const char* commit = bpfprof_build_commit;
  info.commit = commit != nullptr && commit[0] != '\0' ? commit : "unknown";
  info.libbpf = std::to_string(libbpf_major_version()) + "." + std::to_string(libbpf_minor_version());
  // The capstone API annotate is built for (it loads that soname on demand;
  // calling into it here would load it for every command).
  info.capstone = std::to_string(CS_API_MAJOR) + "." + std::to_string(CS_API_MINOR);
  info.zstd = ZSTD_versionString();
  const char* version = nullptr;
  const char* thp = nullptr;
  size_t len = sizeof(const char*);
  if (mallctl != nullptr && mallctl("version", &version, &len, nullptr, 0) == 0 && version) {
    // "5.3.0-0-g54eaed1d8b56...": the release.
    const std::string v(version);
    info.allocator = "jemalloc " + v.substr(0, v.find('-'));
    len = sizeof(const char*);
    if (mallctl("opt.thp", &thp, &len, nullptr, 0) == 0 && thp) {
      info.allocator += std::string(" (thp:") + thp + ")";
    }
  }
  return info;
}

std::string build_info_lines(const BuildInfo& info) {
  return "bpfprof " + info.version + "\ncommit " + info.commit + "\nlibbpf " + info.libbpf +
         "\ncapstone " + info.capstone + "\nzstd " + info.zstd + "\n" +
         (info.allocator.empty() ? "" : info.allocator + "\n");
}

std::string build_info_line(const BuildInfo& info) {
  return "bpfprof " + info.version + " (commit " + info.commit + "; libbpf " + info.libbpf +
         ", capstone " + info.capstone + ", zstd " + info.zstd + ")";
}

}  // namespace bpfprof
