// SPDX-License-Identifier: Apache-2.0
// bpfprof's feature 248: each BPF program's bpf_metadata_* variables, read
// from its .rodata map while it was loaded (bpf/metadata.h) — at start for
// the programs already there, at the pass that hands a program loaded
// during the recording. perf 6.17 writes the same as PERF_RECORD_BPF_METADATA
// records (84), which perf 6.1 cannot skip in `perf script`: ours is a
// section, beside BPF_PROG_INFO, and in-stream pieces (in_stream.h).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "base/byte_cursor.h"
#include "base/error.h"
#include "bpf/prog_info.h"

namespace bpfprof::perfdata {

// Program id -> its variables.
using ProgramMetadata = std::map<uint32_t, bpf::Metadata>;

// The metadata of the programs of `progs` that have some.
ProgramMetadata program_metadata(const std::vector<bpf::ProgInfo>& progs);

// 248: u32 version (2), u32 programs,
//      programs x {u32 prog_id, u32 nr_entries,
//                  nr_entries x {u32 name_len, u32 value_len, u32 kind,
//                                name, value, zero padding to a multiple of 4}}.
// kind: bpf::MetadataKind (0 string, 1 number, 2 boolean, 3 as printed by
// another tool). Version 1 (read too) has no kind: every value a string.
// Names and values are at most kMaxMetadataText bytes (longer values are
// cut there by the writer).
inline constexpr uint32_t kMaxMetadataText = 4096;
std::vector<std::byte> encode_metadata(const ProgramMetadata& metadata);
// Into `out`: a program already there gets the variables of this piece it
// does not have yet. An impossible size (a name or value over the limit,
// more entries than bytes left) is an error naming its offset; the
// programs before it stay in `out`.
Status decode_metadata(Bytes section, uint64_t base_offset, ProgramMetadata& out);

// Adds to each program's metadata the variables of `metadata` it lacks.
void attach_metadata(const ProgramMetadata& metadata, std::vector<bpf::ProgInfo>& progs);

}  // namespace bpfprof::perfdata
