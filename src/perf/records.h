// SPDX-License-Identifier: Apache-2.0
// Typed, zero-copy, bounds-checked views of the records the kernel sends.
// Every parse reads through ByteCursor; variable parts (callchain, names) are
// views into the record bytes, never copies. Layouts: shared perf-data-format.md
// sections 5.1-5.3.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "base/byte_cursor.h"
#include "base/error.h"
#include "perf/abi.h"

namespace bpfprof::perf {

struct RecordHeader {
  uint32_t type = 0;
  uint16_t misc = 0;
  uint16_t size = 0;
};
static_assert(sizeof(RecordHeader) == 8);

// One whole record: header + payload (bytes.size() == header.size).
struct RecordView {
  RecordHeader header;
  Bytes bytes;
  // Absolute position of the record in its input (file offset or ring
  // position), so parse errors can point at the byte that is wrong.
  uint64_t offset = 0;
  uint16_t cpumode() const { return header.misc & kMiscCpumodeMask; }
};

// Reads the record starting at data[offset]: header.size >= 8 and inside data.
// `base_offset` is added to offsets in errors.
Result<RecordView> record_at(Bytes data, size_t offset, uint64_t base_offset = 0);

// A view of n u64 values that may be unaligned (files after COMPRESSED records).
class U64Array {
 public:
  U64Array() = default;
  explicit U64Array(Bytes b) : bytes_(b) {}
  size_t size() const { return bytes_.size() / 8; }
  bool empty() const { return bytes_.empty(); }
  uint64_t operator[](size_t i) const { return load_unaligned<uint64_t>(bytes_.data() + 8 * i); }
  Bytes bytes() const { return bytes_; }

 private:
  Bytes bytes_;
};

// Where fields sit, derived once from sample_type/sample_id_all/read_format.
class SampleLayout {
 public:
  static Result<SampleLayout> from_attr(const perf_event_attr& attr);

  uint64_t sample_type() const { return sample_type_; }
  uint64_t read_format() const { return read_format_; }
  bool sample_id_all() const { return sample_id_all_; }
  // Size of the sample_id trailer of non-sample records (0 without sample_id_all).
  size_t id_hdr_size() const { return id_hdr_size_; }
  uint64_t sample_regs_user() const { return regs_user_; }
  uint64_t sample_regs_intr() const { return regs_intr_; }
  uint64_t branch_sample_type() const { return branch_sample_type_; }

  // Bytes of the fixed u64 fields of a SAMPLE when sample_type has only
  // such fields and maybe a callchain after them, and maybe the cgroup id
  // after that (Sample::parse_fast); -1 for any other layout.
  int fast_fixed_bytes() const { return fast_fixed_bytes_; }

  // Timestamp / id of any record without a full parse; nullopt if absent.
  // Inline for SAMPLEs (every walk asks this of every sample).
  std::optional<uint64_t> time_of(const RecordView& r) const {
    if (r.header.type == kRecordSample) return sample_field(r, sample_time_off_);
    return trailer_field(r, trailer_time_off_);
  }
  std::optional<uint64_t> id_of(const RecordView& r) const {
    if (r.header.type == kRecordSample) return sample_field(r, sample_id_off_);
    return trailer_field(r, trailer_id_off_);
  }

 private:
  uint64_t sample_type_ = 0;
  uint64_t read_format_ = 0;
  uint64_t regs_user_ = 0;
  uint64_t regs_intr_ = 0;
  uint64_t branch_sample_type_ = 0;
  bool sample_id_all_ = false;
  size_t id_hdr_size_ = 0;
  // Offsets from record start (sample) / from the trailer's start; -1 if absent.
  int sample_time_off_ = -1;
  int sample_id_off_ = -1;
  int trailer_time_off_ = -1;
  int trailer_id_off_ = -1;
  int fast_fixed_bytes_ = -1;

  // The u64 `from_start` bytes into a SAMPLE; nullopt if the field is absent
  // (-1) or the record is too short to hold it.
  static std::optional<uint64_t> sample_field(const RecordView& r, int from_start) {
    if (from_start < 0 || r.bytes.size() < static_cast<size_t>(from_start) + 8) return std::nullopt;
    return load_unaligned<uint64_t>(r.bytes.data() + from_start);
  }
  // The u64 `off` bytes into a non-sample record's trailer.
  std::optional<uint64_t> trailer_field(const RecordView& r, int off) const;
};

// Where the sample_id trailer of a non-sample kernel record starts (offset
// from the record start), or nullopt if the record cannot hold it. Usually
// header.size - id_hdr_size; for KSYMBOL and BPF_EVENT it is right after the
// fixed fields, because kernels grow the header.size of those two records by
// every other listener's id_hdr_size and never restore it (the record then
// ends with stale bytes after its real trailer).
std::optional<size_t> trailer_offset(const RecordView& r, size_t id_hdr_size);

// The sample_id trailer (fields present per sample_type).
struct SampleId {
  uint32_t pid = 0, tid = 0;
  uint64_t time = 0;
  uint64_t id = 0;
  uint64_t stream_id = 0;
  uint32_t cpu = 0;
};

// Parses the trailer of a non-sample record at trailer_offset() (all zero
// without sample_id_all, for SAMPLE and for user types). The typed parsers
// below additionally require their own fields to end exactly where the
// trailer starts (Errc::kBadRecord otherwise); KSYMBOL and BPF_EVENT accept
// stale bytes after the trailer (see trailer_offset) and count them.
Result<SampleId> parse_sample_id(const RecordView& r, const SampleLayout& layout);

struct Sample {
  uint64_t id = 0;  // IDENTIFIER or ID
  uint64_t ip = 0;
  uint32_t pid = 0, tid = 0;
  uint64_t time = 0;
  uint64_t addr = 0;
  uint64_t stream_id = 0;
  uint32_t cpu = 0;
  uint64_t period = 0;
  uint64_t cgroup = 0;  // PERF_SAMPLE_CGROUP: the task's cgroup v2 id (0 = absent)
  U64Array callchain;  // raw ips with context markers, leaf first
  Bytes raw;           // PERF_SAMPLE_RAW payload
  // Later fields (branch stack, regs, stack) are skipped with bounds checks.
  static Result<Sample> parse(const RecordView& r, const SampleLayout& layout);
  // The common layouts (SampleLayout::fast_fixed_bytes) into `out`, with no
  // Result to build: false if the record is not one of them or does not fit
  // (parse() then says what is wrong).
  static bool parse_fast(const RecordView& r, const SampleLayout& layout, Sample& out);
};

struct Mmap {  // MMAP (1)
  uint32_t pid = 0, tid = 0;
  uint64_t start = 0, len = 0, pgoff = 0;
  std::string_view filename;
  SampleId sample_id;
  static Result<Mmap> parse(const RecordView& r, const SampleLayout& layout);
};

struct Mmap2 {  // MMAP2 (10)
  uint32_t pid = 0, tid = 0;
  uint64_t start = 0, len = 0, pgoff = 0;
  uint32_t maj = 0, min = 0;
  uint64_t ino = 0, ino_generation = 0;
  uint8_t build_id_size = 0;  // non-zero iff misc has kMiscMmapBuildId
  Bytes build_id;
  uint32_t prot = 0, flags = 0;
  std::string_view filename;
  SampleId sample_id;
  static Result<Mmap2> parse(const RecordView& r, const SampleLayout& layout);
};

struct Comm {  // COMM (3)
  uint32_t pid = 0, tid = 0;
  std::string_view comm;
  SampleId sample_id;
  static Result<Comm> parse(const RecordView& r, const SampleLayout& layout);
};

struct Cgroup {  // CGROUP (19): a cgroup v2 id and its path from the hierarchy's root
  uint64_t id = 0;
  std::string_view path;
  SampleId sample_id;
  static Result<Cgroup> parse(const RecordView& r, const SampleLayout& layout);
};

struct ForkExit {  // FORK (7) and EXIT (4)
  uint32_t pid = 0, ppid = 0, tid = 0, ptid = 0;
  uint64_t time = 0;
  SampleId sample_id;
  static Result<ForkExit> parse(const RecordView& r, const SampleLayout& layout);
};

struct Lost {  // LOST (2)
  uint64_t id = 0, lost = 0;
  SampleId sample_id;
  static Result<Lost> parse(const RecordView& r, const SampleLayout& layout);
};

struct LostSamples {  // LOST_SAMPLES (13)
  uint64_t lost = 0;
  SampleId sample_id;
  static Result<LostSamples> parse(const RecordView& r, const SampleLayout& layout);
};

struct Throttle {  // THROTTLE (5) and UNTHROTTLE (6)
  uint64_t time = 0, id = 0, stream_id = 0;
  SampleId sample_id;
  static Result<Throttle> parse(const RecordView& r, const SampleLayout& layout);
};

struct Ksymbol {  // KSYMBOL (17)
  uint64_t addr = 0;
  uint32_t len = 0;
  uint16_t ksym_type = 0;
  uint16_t flags = 0;
  std::string_view name;
  SampleId sample_id;
  size_t stale_bytes = 0;  // bytes after the trailer (kernel header.size bug)
  bool unregister() const { return flags & kKsymFlagUnregister; }
  static Result<Ksymbol> parse(const RecordView& r, const SampleLayout& layout);
};

struct BpfEvent {  // BPF_EVENT (18)
  uint16_t type = 0;
  uint16_t flags = 0;
  uint32_t id = 0;
  uint8_t tag[kBpfTagSize] = {};
  SampleId sample_id;
  size_t stale_bytes = 0;  // bytes after the trailer (kernel header.size bug)
  static Result<BpfEvent> parse(const RecordView& r, const SampleLayout& layout);
};

// BPF_METADATA (84, written by perf 6.17+, no sample_id): the program a
// KSYMBOL named `prog_name` (one record per function's name) and its
// bpf_metadata_* variables, names without the prefix, values as perf
// printed them. Fixed-size fields: prog_name[512], nr_entries,
// entries[nr_entries] of key[64] and value[256], NUL-terminated.
struct BpfMetadata {
  static constexpr size_t kProgNameLen = 512, kKeyLen = 64, kValueLen = 256;
  std::string_view prog_name;
  std::vector<std::pair<std::string_view, std::string_view>> entries;  // key, value
  static Result<BpfMetadata> parse(const RecordView& r);
};

}  // namespace bpfprof::perf
