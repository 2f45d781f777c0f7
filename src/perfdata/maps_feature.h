// SPDX-License-Identifier: Apache-2.0
// bpfprof's feature 249: the maps each BPF program uses — id, type, name,
// key and value sizes, max entries, flags, and where the in-kernel capture
// saw them in kernel memory (what the JIT image loads for them). Captured
// at the program's load, or queried by id (programs there at start, loads
// the capture missed). Stored per program, beside its BPF_PROG_INFO entry
// (perf's layout has no room for more than the map ids).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "base/byte_cursor.h"
#include "base/error.h"
#include "bpf/prog_info.h"

namespace bpfprof::perfdata {

// Program id -> its maps, in the kernel's order.
using ProgramMaps = std::map<uint32_t, std::vector<bpf::MapInfo>>;

// The maps of the programs of `progs` whose maps are known.
ProgramMaps program_maps(const std::vector<bpf::ProgInfo>& progs);

// 249: u32 version (1), u32 map_entry_size (64), u32 programs, u32 0,
//      programs x {u32 prog_id, u32 nr_maps (at most 64, the kernel's
//                  MAX_USED_MAPS), nr_maps x map entry},
//      map entry: u32 id, u32 type, u32 key_size, u32 value_size,
//                 u32 max_entries, u32 flags, char name[16] (NUL padded),
//                 u64 addr, u64 value_addr (0: not known), u64 0.
// A newer writer's longer map entries are read for their first 64 bytes.
std::vector<std::byte> encode_maps(const ProgramMaps& maps);
// Into `out`: a program already there gets the maps of this list it does
// not have yet, appended (a recorder's later piece for a program lists the
// maps BPF_PROG_BIND_MAP bound to it since). An entry with
// an impossible size (more maps than a program can use, entries shorter
// than 64 bytes or past the section's end) is an error naming its offset;
// the programs before it stay in `out`.
Status decode_maps(Bytes section, uint64_t base_offset, ProgramMaps& out);

// Sets each program's maps from `maps` (those it has no entry for keep theirs).
void attach_maps(const ProgramMaps& maps, std::vector<bpf::ProgInfo>& progs);

}  // namespace bpfprof::perfdata
