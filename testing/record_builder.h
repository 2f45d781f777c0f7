// SPDX-License-Identifier: Apache-2.0
// Test-only builders of kernel record bytes (layouts: shared perf-data-format.md
// sections 4-5). Each function returns one whole record with header.size set;
// records other than SAMPLE end with the sample_id trailer that `sample_type`
// selects (pass 0 for "no sample_id_all"). Deliberately simple: tests that need
// hostile bytes start from these and patch them, or use RecordWriter directly.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/byte_cursor.h"
#include "perf/abi.h"
#include "perf/records.h"

namespace bpfprof::testing {

using ByteVec = std::vector<std::byte>;

// Appends fields of one record and patches header.size on finish().
class RecordWriter {
 public:
  RecordWriter(uint32_t type, uint16_t misc) {
    u32(type);
    u16(misc);
    u16(0);  // size, patched by finish()
  }
  RecordWriter& u8(uint8_t v) { return pod(v); }
  RecordWriter& u16(uint16_t v) { return pod(v); }
  RecordWriter& u32(uint32_t v) { return pod(v); }
  RecordWriter& u64(uint64_t v) { return pod(v); }
  RecordWriter& bytes(const ByteVec& b) {
    out_.insert(out_.end(), b.begin(), b.end());
    return *this;
  }
  // A NUL-terminated string zero-padded to a multiple of 8 (as the kernel writes).
  RecordWriter& padded_string(std::string_view s) {
    size_t n = (s.size() + 1 + 7) & ~size_t{7};
    size_t at = out_.size();
    out_.resize(at + n);
    std::memcpy(out_.data() + at, s.data(), s.size());
    return *this;
  }
  // `s` in a zero-filled field of n bytes (cut to n - 1, so a NUL ends it).
  RecordWriter& fixed_string(std::string_view s, size_t n) {
    const size_t at = out_.size();
    out_.resize(at + n);
    std::memcpy(out_.data() + at, s.data(), std::min(s.size(), n - 1));
    return *this;
  }
  size_t size() const { return out_.size(); }
  ByteVec finish() {
    uint16_t size = static_cast<uint16_t>(out_.size());
    std::memcpy(out_.data() + 6, &size, sizeof size);
    return std::move(out_);
  }

 private:
  template <class T>
  RecordWriter& pod(T v) {
    append_pod(out_, v);
    return *this;
  }
  ByteVec out_;
};

// Values of the sample_id trailer; which of them are written depends on sample_type.
struct TrailerValues {
  uint32_t pid = 0, tid = 0;
  uint64_t time = 0;
  uint64_t id = 0;
  uint64_t stream_id = 0;
  uint32_t cpu = 0;
};

// The trailer of a non-sample record: TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER.
inline ByteVec sample_id_trailer(uint64_t sample_type, const TrailerValues& t) {
  ByteVec out;
  if (sample_type & PERF_SAMPLE_TID) {
    append_pod(out, t.pid);
    append_pod(out, t.tid);
  }
  if (sample_type & PERF_SAMPLE_TIME) append_pod(out, t.time);
  if (sample_type & PERF_SAMPLE_ID) append_pod(out, t.id);
  if (sample_type & PERF_SAMPLE_STREAM_ID) append_pod(out, t.stream_id);
  if (sample_type & PERF_SAMPLE_CPU) {
    append_pod(out, t.cpu);
    append_pod(out, uint32_t{0});
  }
  if (sample_type & PERF_SAMPLE_IDENTIFIER) append_pod(out, t.id);
  return out;
}

// SAMPLE fields this builder can write: the fixed ones, CALLCHAIN, RAW and CGROUP.
struct SampleValues {
  uint64_t id = 0;  // written for IDENTIFIER and for ID
  uint64_t ip = 0;
  uint32_t pid = 0, tid = 0;
  uint64_t time = 0;
  uint64_t addr = 0;
  uint64_t stream_id = 0;
  uint32_t cpu = 0;
  uint64_t period = 0;
  std::vector<uint64_t> callchain;  // written as nr + ips
  ByteVec raw;                      // written as u32 size + bytes (pad it yourself)
  uint64_t cgroup = 0;
};

// A SAMPLE with fields in ABI order; sample_type bits other than the ones in
// SampleValues are not written (build those by hand with RecordWriter).
inline ByteVec sample_record(uint64_t sample_type, const SampleValues& s,
                             uint16_t misc = perf::kMiscUser) {
  RecordWriter w(perf::kRecordSample, misc);
  if (sample_type & PERF_SAMPLE_IDENTIFIER) w.u64(s.id);
  if (sample_type & PERF_SAMPLE_IP) w.u64(s.ip);
  if (sample_type & PERF_SAMPLE_TID) w.u32(s.pid).u32(s.tid);
  if (sample_type & PERF_SAMPLE_TIME) w.u64(s.time);
  if (sample_type & PERF_SAMPLE_ADDR) w.u64(s.addr);
  if (sample_type & PERF_SAMPLE_ID) w.u64(s.id);
  if (sample_type & PERF_SAMPLE_STREAM_ID) w.u64(s.stream_id);
  if (sample_type & PERF_SAMPLE_CPU) w.u32(s.cpu).u32(0);
  if (sample_type & PERF_SAMPLE_PERIOD) w.u64(s.period);
  if (sample_type & PERF_SAMPLE_CALLCHAIN) {
    w.u64(s.callchain.size());
    for (uint64_t ip : s.callchain) w.u64(ip);
  }
  if (sample_type & PERF_SAMPLE_RAW) w.u32(static_cast<uint32_t>(s.raw.size())).bytes(s.raw);
  if (sample_type & PERF_SAMPLE_CGROUP) w.u64(s.cgroup);
  return w.finish();
}

struct Mmap2Values {
  uint32_t pid = 0, tid = 0;
  uint64_t start = 0, len = 0, pgoff = 0;
  uint32_t maj = 0, min = 0;
  uint64_t ino = 0, ino_generation = 0;
  uint32_t prot = 0, flags = 0;
  std::string_view filename;
};

// MMAP2 with maj/min/ino (not the build-id form).
inline ByteVec mmap2_record(uint64_t sample_type, const Mmap2Values& m,
                            const TrailerValues& t = {}, uint16_t misc = perf::kMiscUser) {
  RecordWriter w(perf::kRecordMmap2, misc);
  w.u32(m.pid).u32(m.tid).u64(m.start).u64(m.len).u64(m.pgoff);
  w.u32(m.maj).u32(m.min).u64(m.ino).u64(m.ino_generation);
  w.u32(m.prot).u32(m.flags).padded_string(m.filename);
  return w.bytes(sample_id_trailer(sample_type, t)).finish();
}

// MMAP (v1).
inline ByteVec mmap_record(uint64_t sample_type, uint32_t pid, uint32_t tid, uint64_t start,
                           uint64_t len, uint64_t pgoff, std::string_view filename,
                           const TrailerValues& t = {}, uint16_t misc = perf::kMiscUser) {
  RecordWriter w(perf::kRecordMmap, misc);
  w.u32(pid).u32(tid).u64(start).u64(len).u64(pgoff).padded_string(filename);
  return w.bytes(sample_id_trailer(sample_type, t)).finish();
}

inline ByteVec comm_record(uint64_t sample_type, uint32_t pid, uint32_t tid,
                           std::string_view comm, const TrailerValues& t = {},
                           uint16_t misc = 0) {
  RecordWriter w(perf::kRecordComm, misc);
  w.u32(pid).u32(tid).padded_string(comm);
  return w.bytes(sample_id_trailer(sample_type, t)).finish();
}

// CGROUP: a cgroup id and its path.
inline ByteVec cgroup_record(uint64_t sample_type, uint64_t id, std::string_view path,
                             const TrailerValues& t = {}) {
  RecordWriter w(perf::kRecordCgroup, 0);
  w.u64(id).padded_string(path);
  return w.bytes(sample_id_trailer(sample_type, t)).finish();
}

// FORK (exit = false) or EXIT (exit = true).
inline ByteVec fork_exit_record(uint64_t sample_type, bool exit, uint32_t pid, uint32_t ppid,
                                uint32_t tid, uint32_t ptid, uint64_t time,
                                const TrailerValues& t = {}, uint16_t misc = 0) {
  RecordWriter w(exit ? perf::kRecordExit : perf::kRecordFork, misc);
  w.u32(pid).u32(ppid).u32(tid).u32(ptid).u64(time);
  return w.bytes(sample_id_trailer(sample_type, t)).finish();
}

inline ByteVec lost_record(uint64_t sample_type, uint64_t id, uint64_t lost,
                           const TrailerValues& t = {}) {
  RecordWriter w(perf::kRecordLost, 0);
  w.u64(id).u64(lost);
  return w.bytes(sample_id_trailer(sample_type, t)).finish();
}

inline ByteVec lost_samples_record(uint64_t sample_type, uint64_t lost,
                                   const TrailerValues& t = {}) {
  RecordWriter w(perf::kRecordLostSamples, 0);
  w.u64(lost);
  return w.bytes(sample_id_trailer(sample_type, t)).finish();
}

// THROTTLE (unthrottle = false) or UNTHROTTLE.
inline ByteVec throttle_record(uint64_t sample_type, bool unthrottle, uint64_t time, uint64_t id,
                               uint64_t stream_id, const TrailerValues& t = {}) {
  RecordWriter w(unthrottle ? perf::kRecordUnthrottle : perf::kRecordThrottle, 0);
  w.u64(time).u64(id).u64(stream_id);
  return w.bytes(sample_id_trailer(sample_type, t)).finish();
}

inline ByteVec ksymbol_record(uint64_t sample_type, uint64_t addr, uint32_t len,
                              uint16_t ksym_type, uint16_t flags, std::string_view name,
                              const TrailerValues& t = {}) {
  RecordWriter w(perf::kRecordKsymbol, perf::kMiscKernel);
  w.u64(addr).u32(len).u16(ksym_type).u16(flags).padded_string(name);
  return w.bytes(sample_id_trailer(sample_type, t)).finish();
}

inline ByteVec bpf_event_record(uint64_t sample_type, uint16_t type, uint16_t flags,
                                uint32_t id, const uint8_t (&tag)[perf::kBpfTagSize],
                                const TrailerValues& t = {}) {
  RecordWriter w(perf::kRecordBpfEvent, perf::kMiscKernel);
  w.u16(type).u16(flags).u32(id);
  for (uint8_t b : tag) w.u8(b);
  return w.bytes(sample_id_trailer(sample_type, t)).finish();
}

// BPF_METADATA (perf 6.17+, no trailer): the program a KSYMBOL named
// `prog_name` and its bpf_metadata_* variables (key, value).
inline ByteVec bpf_metadata_record(
    std::string_view prog_name, const std::vector<std::pair<std::string, std::string>>& entries) {
  RecordWriter w(perf::kRecordBpfMetadata, 0);
  w.fixed_string(prog_name, perf::BpfMetadata::kProgNameLen).u64(entries.size());
  for (const auto& [key, value] : entries) {
    w.fixed_string(key, perf::BpfMetadata::kKeyLen).fixed_string(value, perf::BpfMetadata::kValueLen);
  }
  return w.finish();
}

// FINISHED_ROUND: header only, never a trailer (user record type).
inline ByteVec finished_round_record() {
  return RecordWriter(perf::kRecordFinishedRound, 0).finish();
}

// Concatenates records (e.g. to fill a ring or a data section).
inline ByteVec concat(std::initializer_list<ByteVec> parts) {
  ByteVec out;
  for (const ByteVec& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace bpfprof::testing
