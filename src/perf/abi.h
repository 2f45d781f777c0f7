// SPDX-License-Identifier: Apache-2.0
// The one place that includes the kernel's perf uapi header, plus the
// constants bpfprof uses that older headers may lack. Byte layouts of every
// record are documented in records.h.
#pragma once

#include <linux/perf_event.h>

#include <cstdint>

namespace bpfprof::perf {

// perf 6.1 refuses attrs larger than VER7 (128 bytes); we always write 128.
inline constexpr uint32_t kAttrSizeWritten = 128;
static_assert(sizeof(perf_event_attr) >= kAttrSizeWritten);

// Kernel record types (enum perf_event_type).
enum RecordType : uint32_t {
  kRecordMmap = 1,
  kRecordLost = 2,
  kRecordComm = 3,
  kRecordExit = 4,
  kRecordThrottle = 5,
  kRecordUnthrottle = 6,
  kRecordFork = 7,
  kRecordRead = 8,
  kRecordSample = 9,
  kRecordMmap2 = 10,
  kRecordAux = 11,
  kRecordItraceStart = 12,
  kRecordLostSamples = 13,
  kRecordSwitch = 14,
  kRecordSwitchCpuWide = 15,
  kRecordNamespaces = 16,
  kRecordKsymbol = 17,
  kRecordBpfEvent = 18,
  kRecordCgroup = 19,
  kRecordTextPoke = 20,
  kRecordAuxOutputHwId = 21,
  // User-space (perf-synthesized) types.
  kRecordHeaderAttr = 64,
  kRecordHeaderBuildId = 67,
  kRecordFinishedRound = 68,
  kRecordIdIndex = 69,
  kRecordHeaderFeature = 80,
  kRecordCompressed = 81,
  kRecordFinishedInit = 82,
  kRecordUserTypeLimit61 = 83,  // perf 6.1 rejects types >= this
  // perf 6.17+: one program's bpf_metadata_* variables (not written by
  // bpfprof: perf 6.1's script stops at it).
  kRecordBpfMetadata = 84,
};

// misc bits
inline constexpr uint16_t kMiscCpumodeMask = 7;
inline constexpr uint16_t kMiscKernel = 1;
inline constexpr uint16_t kMiscUser = 2;
inline constexpr uint16_t kMiscMmapData = 1 << 13;
inline constexpr uint16_t kMiscCommExec = 1 << 13;
inline constexpr uint16_t kMiscForkExec = 1 << 13;
inline constexpr uint16_t kMiscMmapBuildId = 1 << 14;
inline constexpr uint16_t kMiscExactIp = 1 << 14;

inline constexpr uint16_t kKsymTypeUnknown = 0;
inline constexpr uint16_t kKsymTypeBpf = 1;
inline constexpr uint16_t kKsymTypeOol = 2;
inline constexpr uint16_t kKsymFlagUnregister = 1;

inline constexpr uint16_t kBpfEventUnknown = 0;
inline constexpr uint16_t kBpfEventProgLoad = 1;
inline constexpr uint16_t kBpfEventProgUnload = 2;
inline constexpr size_t kBpfTagSize = 8;

// Callchain context markers.
inline constexpr uint64_t kContextHv = static_cast<uint64_t>(-32);
inline constexpr uint64_t kContextKernel = static_cast<uint64_t>(-128);
inline constexpr uint64_t kContextUser = static_cast<uint64_t>(-512);
inline constexpr uint64_t kContextGuest = static_cast<uint64_t>(-2048);
inline constexpr uint64_t kContextGuestKernel = static_cast<uint64_t>(-2176);
inline constexpr uint64_t kContextGuestUser = static_cast<uint64_t>(-2560);
inline constexpr uint64_t kContextMax = static_cast<uint64_t>(-4095);

// sample_type bits perf 6.1 knows; anything at or above this is refused.
inline constexpr uint64_t kSampleTypeLimit61 = 1ull << 25;

}  // namespace bpfprof::perf
