// SPDX-License-Identifier: Apache-2.0
// On-disk structures shared by the perf.data reader and writer: the 104-byte
// file header, sections, the user record types only files carry, and the
// feature codec the two use.
// Layout facts: shared perf-data-format.md sections 1-3 and 8; the kernel
// source that writes them is tools/perf/util/header.c (perf_session__write_header).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/byte_cursor.h"
#include "base/error.h"
#include "perf/abi.h"
#include "perfdata/features.h"

namespace bpfprof::perfdata {

// "PERFILE2" read as a host u64 on a little-endian machine.
inline constexpr uint64_t kMagic = 0x32454c4946524550ull;
inline constexpr uint64_t kMagicSwapped = 0x50455246494c4532ull;
inline constexpr uint64_t kFileHeaderSize = 104;
inline constexpr uint64_t kPipeHeaderSize = 16;
// One attr-section entry: the attr as written plus its ids section.
inline constexpr uint64_t kAttrEntrySize = perf::kAttrSizeWritten + 16;
inline constexpr int kFeatureBits = 256;

// perf-synthesized record types the reader handles beyond perf/abi.h's.
inline constexpr uint32_t kRecordHeaderTracingData = 66;  // payload follows the record
inline constexpr uint32_t kRecordAuxtrace = 71;           // payload follows the record
inline constexpr uint32_t kRecordEventUpdate = 78;
inline constexpr uint64_t kEventUpdateName = 2;
inline constexpr uint32_t kCompZstd = 1;  // HEADER_COMPRESSED comp_type

// Record types perf 6.1 defines: kernel 1..21, perf's own 64..82; and
// perf 6.17's BPF_METADATA (84). Others are counted and skipped by the reader.
inline bool known_record_type(uint32_t type) {
  return (type >= perf::kRecordMmap && type <= perf::kRecordAuxOutputHwId) ||
         (type >= perf::kRecordHeaderAttr && type < perf::kRecordUserTypeLimit61) ||
         type == perf::kRecordBpfMetadata;
}

// Bytes that follow a record outside its header.size (AUXTRACE data,
// HEADER_TRACING_DATA blob); 0 for every other type.
inline uint64_t trailing_payload(uint32_t type, Bytes record) {
  if (type == kRecordAuxtrace && record.size() >= 16)
    return load_unaligned<uint64_t>(record.data() + 8);
  if (type == kRecordHeaderTracingData && record.size() >= 12)
    return load_unaligned<uint32_t>(record.data() + 8);
  return 0;
}

struct FileSection {
  uint64_t offset = 0;
  uint64_t size = 0;
};
static_assert(sizeof(FileSection) == 16);

struct FileHeader {
  uint64_t magic = kMagic;
  uint64_t size = kFileHeaderSize;
  uint64_t attr_size = kAttrEntrySize;
  FileSection attrs;
  FileSection data;
  FileSection event_types;  // obsolete, zeros
  uint64_t adds_features[4] = {};
};
static_assert(sizeof(FileHeader) == kFileHeaderSize);

inline bool feature_bit(const uint64_t bitmap[4], int feat) {
  return feat > 0 && feat < kFeatureBits && ((bitmap[feat / 64] >> (feat % 64)) & 1);
}
inline void set_feature_bit(uint64_t bitmap[4], int feat) {
  bitmap[feat / 64] |= 1ull << (feat % 64);
}

// An attr with the name and ids EVENT_DESC carries, independent of whether it
// came from the writer's AttrEntry or the reader's FileAttr.
struct EventDescEntry {
  const perf_event_attr* attr = nullptr;
  const std::string* name = nullptr;
  const std::vector<uint64_t>* ids = nullptr;
};

// Payload of every feature `features` and `events` call for, keyed by feature
// number (ascending = the order of the feature table).
std::map<int, std::vector<std::byte>> encode_features(const Features& features,
                                                      const std::vector<EventDescEntry>& events);

// Decodes one feature payload into `out`; EVENT_DESC names go to `event_names`
// by position. Unknown or uninterpreted features are kept raw in out.other.
Status decode_feature(int feat, Bytes payload, uint64_t base_offset, Features& out,
                      std::vector<std::string>& event_names);

}  // namespace bpfprof::perfdata
