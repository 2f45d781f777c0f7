// SPDX-License-Identifier: Apache-2.0
// Who holds the BPF programs loaded before recording began (bpfprof's
// feature 253): every process with an fd of the program or of a BPF link
// attaching it (/proc/<pid>/fd and fdinfo's prog_id), and whether the
// program or a link of it is pinned in a mounted BPF filesystem.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "host/synthesize.h"
#include "perfdata/owners_feature.h"

namespace bpfprof::host {

// The holders of the programs `ids` (the others are ignored), each with its
// cgroup v2 id where `cgroup2` is mounted. Processes and pins that vanish
// while they are read are skipped.
perfdata::OwnersSection scan_program_owners(const std::vector<uint32_t>& ids,
                                            const std::optional<Cgroup2Mount>& cgroup2,
                                            const std::string& proc = "/proc");

// The directory under `cgroup2` of the cgroup v2 path a /proc/<pid>/cgroup
// text names ("0::/a/b"); empty when it names none or one outside the mount.
std::string cgroup_dir_of(std::string_view proc_cgroup, const Cgroup2Mount& cgroup2);

// prog_id of an fdinfo text (a program's or a link's fd); 0 if absent.
uint32_t fdinfo_prog_id(std::string_view fdinfo);

// Mount points of every BPF filesystem in /proc/self/mountinfo text.
std::vector<std::string> bpffs_mounts(std::string_view mountinfo);

}  // namespace bpfprof::host
