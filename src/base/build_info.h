// SPDX-License-Identifier: Apache-2.0
// What a bug report needs to know about this binary: the project version, the
// commit it was built from, and the versions of the libraries that shape what
// is recorded and read (asked of the libraries at run time, so a package
// upgraded under the binary shows).
#pragma once

#include <string>

namespace bpfprof {

struct BuildInfo {
  std::string version;  // the project's, e.g. "0.1.0"
  std::string commit;   // `git describe` of the tree at build time, or "unknown"
  std::string libbpf, capstone, zstd;
  // "jemalloc 5.3.0 (thp:always)" where the binary is linked with jemalloc
  // (its version and huge-page setting, asked of it), else empty.
  std::string allocator;
};

BuildInfo build_info();

// `bpfprof --version`: one line each, "bpfprof 0.1.0", "commit ...", "libbpf 1.1", ...,
// the allocator's last where there is one.
std::string build_info_lines(const BuildInfo& info);

// The same on one line (the VERSION feature of a recording, the report header):
// "bpfprof 0.1.0 (commit d537b25d31be; libbpf 1.1, capstone 4.0, zstd 1.5.4)".
std::string build_info_line(const BuildInfo& info);

}  // namespace bpfprof
