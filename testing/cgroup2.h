// SPDX-License-Identifier: Apache-2.0
// Where cgroup v2 is mounted, read by the kernel tests on their own (their
// ground truth does not come from the code under test).
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace bpfprof::testing {

// The cgroup v2 mount point of the whole hierarchy, "" if there is none.
inline std::string cgroup2_mount() {
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    const size_t dash = line.find(" - cgroup2 ");
    if (dash == std::string::npos) continue;
    std::istringstream f(line.substr(0, dash));
    std::string id, parent, dev, root, mount_point;
    f >> id >> parent >> dev >> root >> mount_point;
    if (root == "/") return mount_point;
  }
  return "";
}

}  // namespace bpfprof::testing
