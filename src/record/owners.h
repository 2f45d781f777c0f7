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

#include "perfdata/owners_feature.h"

namespace bpfprof::record {

// The holders of the programs `ids` (the others are ignored). Processes and
// pins that vanish while they are read are skipped.
perfdata::OwnersSection scan_program_owners(const std::vector<uint32_t>& ids,
                                            const std::string& proc = "/proc");

// prog_id of an fdinfo text (a program's or a link's fd); 0 if absent.
uint32_t fdinfo_prog_id(std::string_view fdinfo);

// Mount points of every BPF filesystem in /proc/self/mountinfo text.
std::vector<std::string> bpffs_mounts(std::string_view mountinfo);

}  // namespace bpfprof::record
