// SPDX-License-Identifier: Apache-2.0
// Feature sections: numbers, the values bpfprof writes, and their encoders and
// decoders (shared perf-data-format.md section 8).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/byte_cursor.h"
#include "base/error.h"
#include "bpf/prog_info.h"
#include "perf/abi.h"
#include "perfdata/attach_feature.h"
#include "perfdata/enrichment_feature.h"
#include "perfdata/maps_feature.h"
#include "perfdata/metadata_feature.h"
#include "perfdata/owners_feature.h"

namespace bpfprof::perfdata {

enum Feature : int {
  kFeatTracingData = 1,
  kFeatBuildId = 2,
  kFeatHostname = 3,
  kFeatOsRelease = 4,
  kFeatVersion = 5,
  kFeatArch = 6,
  kFeatNrCpus = 7,
  kFeatCpuDesc = 8,
  kFeatCpuId = 9,
  kFeatTotalMem = 10,
  kFeatCmdline = 11,
  kFeatEventDesc = 12,
  kFeatSampleTime = 21,
  kFeatClockId = 23,
  kFeatBpfProgInfo = 25,
  kFeatBpfBtf = 26,
  kFeatCompressed = 27,
  kFeatClockData = 29,
  kFeatLast61 = 32,  // perf 6.1's HEADER_LAST_FEATURE
  // bpfprof's own sections, far above any number perf uses: perf skips feature
  // bits it does not know in file mode.
  kFeatBpfprofMetadata = 248,  // programs' bpf_metadata_* variables (metadata_feature.h)
  kFeatBpfprofMaps = 249,      // the maps each program uses (maps_feature.h)
  kFeatBpfprofKallsyms = 250,
  kFeatBpfprofEnrichment = 251,  // how BPF programs were enriched (enrichment_feature.h)
  kFeatBpfprofRunStats = 252,    // per-program run statistics (record --bpf-stats)
  kFeatBpfprofOwners = 253,      // who held the programs loaded at start (owners_feature.h)
  kFeatBpfprofAttach = 254,      // where programs were attached (attach_feature.h)
  kFeatBpfprofVdso = 255,        // the recording host's vDSO image (encode_vdso)
};

// HEADER_COMPRESSED (27), written by `perf record -z`.
struct Compression {
  uint32_t version = 0;
  uint32_t type = 0;      // 1 = zstd
  uint32_t level = 0;
  uint32_t ratio = 0;
  uint32_t mmap_len = 0;  // bound on what one COMPRESSED record decompresses to
};

// What a file says about where and how it was recorded. Optional parts are
// written only when set.
struct Features {
  std::optional<std::string> hostname, osrelease, version, arch;
  std::optional<uint32_t> nr_cpus_avail, nr_cpus_online;
  std::vector<std::string> cmdline;            // argv[0] = our binary path
  std::optional<uint64_t> clockid_res_ns;      // CLOCKID
  std::optional<uint64_t> first_sample_time, last_sample_time;  // SAMPLE_TIME
  std::vector<bpf::ProgInfo> bpf_prog_info;    // BPF_PROG_INFO, keyed by info.id
  std::vector<bpf::BtfBlob> bpf_btf;           // BPF_BTF
  // bpfprof's 249 as read (the writer stores the maps of bpf_prog_info
  // and these); the reader also sets each bpf_prog_info entry's maps.
  ProgramMaps bpf_maps;
  // bpfprof's 248 likewise (the writer stores the metadata of bpf_prog_info
  // and this); the reader also adds it to each bpf_prog_info entry.
  ProgramMetadata bpf_metadata;
  // Kernel and module text symbols as /proc/kallsyms listed them when the
  // recording started ("addr type name [module]" lines), so a report on another
  // machine or after a reboot names kernel code the same. What a recorder
  // writes: stored as a table (encode_kallsyms); readers leave it empty and
  // set `kallsyms_packed` instead.
  std::optional<std::string> kallsyms;
  // The snapshot section as stored (any version), read with
  // KallsymsTable::open (kallsyms_table.h): a view into the reader's file,
  // valid as long as the FileReader; empty when the file has none.
  Bytes kallsyms_packed;
  uint64_t kallsyms_packed_at = 0;  // its file offset (error messages)
  std::optional<Compression> compression;      // COMPRESSED
  std::optional<EnrichmentSection> enrichment;  // bpfprof's 251
  std::optional<RunStatsSection> run_stats;     // bpfprof's 252
  std::optional<OwnersSection> owners;          // bpfprof's 253
  std::optional<AttachSection> attach;          // bpfprof's 254
  // bpfprof's 255: the vDSO image of the recording host (an ELF image), so
  // [vdso] frames are named from the file. Writer: the bytes to store (the
  // caller keeps them alive until close); reader: a view into its file.
  Bytes vdso;
  uint64_t vdso_at = 0;  // its file offset (error messages)
  // EVENT_DESC is derived from the attrs by the writer.
  // Sections bpfprof does not interpret (reader: kept raw by number).
  std::map<int, std::vector<std::byte>> other;
};

// perf_header_string: u32 len (roundup(strlen+1, 64)) + NUL-padded bytes.
void encode_string(std::vector<std::byte>& out, const std::string& s);
Result<std::string> decode_string(ByteCursor& c, std::string_view field);

// BPF_PROG_INFO: u32 count, then per program u32 info_len, u32 data_len,
// u64 arrays, info (pointer fields hold offsets into data), data (arrays in
// PERF_BPIL order, each padded to 8). Readers accept any info_len.
std::vector<std::byte> encode_bpf_prog_info(const std::vector<bpf::ProgInfo>& progs);
Result<std::vector<bpf::ProgInfo>> decode_bpf_prog_info(Bytes section, uint64_t base_offset);
// BPF_BTF: u32 count, then per blob u32 id, u32 size, bytes. A blob whose BTF
// header declares more bytes than it has is left out, with an error in
// `bad_blobs` (the others are kept).
std::vector<std::byte> encode_bpf_btf(const std::vector<bpf::BtfBlob>& blobs);
Result<std::vector<bpf::BtfBlob>> decode_bpf_btf(Bytes section, uint64_t base_offset,
                                                 std::vector<Error>* bad_blobs = nullptr);

// bpfprof's kallsyms snapshot (feature 250) from /proc/kallsyms text: the
// table of version 2 (layout in kallsyms_table.h), one opaque blob. Read back
// with KallsymsTable::open.
std::vector<std::byte> encode_kallsyms(std::string_view text);
// Version 3, what the recorder wrote before version 5: the version 2 table with addresses and
// name ends as differences from the one before, zstd-compressed: u32 version
// (3), u32 compression (1 = zstd), u64 raw_size (of the table), the frame.
// 0.63 MB for the 4.6 MB table of a kernel with 121k text symbols.
std::vector<std::byte> encode_kallsyms_compact(std::string_view text);
// Version 5, what the recorder writes: the version 2 table in blocks of 1024
// symbols, each a zstd frame, decompressed when a lookup first needs it:
// u32 version (5), u32 compression (1), u64 count, u64 etext, u32 modules,
// u32 symbols_per_block, u32 blocks, u32 module_pool_size, u64 first
// address of each block, u64 end of each block's frame (from the first
// frame's start), u32 end of each module's "[name]" in the module pool, the
// pool, the frames. A block: u64 address and u32 name end of each symbol as
// differences from the one before (the first address: 0, the block's first
// address being the index's), u16 module of each, their names. 0.73 MB for
// a kernel with 121k text symbols.
std::vector<std::byte> encode_kallsyms_blocked(std::string_view text);
// Version 4, a closed file's section when the snapshot is in its data as
// in-stream records (in_stream.h), so it is stored once: u32 version (4),
// u32 flags (0), u64 file offset of the first record, u64 bytes of records.
// The reader puts the blob those records hold in its place.
std::vector<std::byte> encode_kallsyms_in_stream_ref(uint64_t offset, uint64_t size);
// {offset, size} when `section` is a version 4 section.
std::optional<std::pair<uint64_t, uint64_t>> kallsyms_in_stream_ref(Bytes section);
// Version 1, what recorders wrote before: u32 version (1), u32 compression
// (0 = none, 1 = zstd), u64 raw_size, then the (compressed) text. Kept so
// that tests can make old files; KallsymsTable::open still reads it.
std::vector<std::byte> encode_kallsyms_v1(std::string_view text);

// bpfprof's vDSO section (255): u32 version (1), u32 flags (0), u64 size,
// the image, zero padding to a multiple of 8.
std::vector<std::byte> encode_vdso(Bytes image);
// The image a section holds (a view into `section`); errors on a version not
// known or a size past the section's end.
Result<Bytes> decode_vdso(Bytes section, uint64_t base_offset);

// Fills hostname/osrelease/arch (uname), nr cpus, version, clockid resolution.
Features host_features();

}  // namespace bpfprof::perfdata
