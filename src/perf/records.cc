// SPDX-License-Identifier: Apache-2.0
// Parsers of the fixed-layout kernel records (perf-data-format.md 5.1-5.2).
// Each one splits the record into its own fields and the sample_id trailer,
// reads the fields through ByteCursor and insists they end exactly where the
// trailer starts: a mismatch means we or the writer got the layout wrong, and
// silently drifting would misattribute every later timestamp. KSYMBOL and
// BPF_EVENT find their trailer right after their fields instead (the kernel
// may inflate their header.size; see trailer_offset in records.h).
#include <algorithm>
#include <cstring>
#include <string>

#include "perf/records.h"

namespace bpfprof::perf {
namespace {

constexpr size_t kHeaderSize = sizeof(RecordHeader);
constexpr size_t kBuildIdBytes = 20;

// A record's own fields (between header and trailer) and its parsed trailer.
struct Parts {
  ByteCursor body;
  SampleId sample_id;
  size_t stale = 0;
};

Status check_whole(const RecordView& r, const char* what) {
  if (r.bytes.size() < kHeaderSize || r.bytes.size() != r.header.size) {
    return make_error_at(Errc::kBadRecord, r.offset,
                         std::string(what) + ": header.size " + std::to_string(r.header.size) +
                             " does not match the " + std::to_string(r.bytes.size()) +
                             " bytes of the record");
  }
  return ok_status();
}

// The fixed fields of the two side-band records whose header.size the kernel
// may inflate (see trailer_offset in records.h).
constexpr size_t kBpfEventFixed = 24;
constexpr size_t kKsymbolNameAt = 24;

size_t pad8(size_t n) { return (n + 7) & ~size_t{7}; }

// Where the trailer starts, with the reason when the record cannot hold one.
Result<size_t> trailer_start(const RecordView& r, size_t id_hdr_size) {
  const size_t size = r.bytes.size();
  size_t body_end = 0;
  if (r.header.type == kRecordBpfEvent) {
    body_end = kBpfEventFixed;
  } else if (r.header.type == kRecordKsymbol) {
    if (size < kKsymbolNameAt) {
      return make_error_at(Errc::kTruncated, r.offset,
                           "KSYMBOL: " + std::to_string(size) + " bytes, fixed fields need 24");
    }
    const char* name = reinterpret_cast<const char*>(r.bytes.data() + kKsymbolNameAt);
    const size_t len = strnlen(name, size - kKsymbolNameAt);
    if (len == size - kKsymbolNameAt) {
      return make_error_at(Errc::kBadRecord, r.offset + kKsymbolNameAt,
                           "KSYMBOL.name: no NUL in the record");
    }
    // The kernel pads the name to 8; a writer that did not pad ends the record there.
    body_end = std::min(kKsymbolNameAt + pad8(len + 1), size);
    if (body_end + id_hdr_size > size) {
      return make_error_at(Errc::kBadRecord, r.offset + kKsymbolNameAt,
                           "KSYMBOL.name ends at byte " + std::to_string(body_end) +
                               ": no room for the " + std::to_string(id_hdr_size) +
                               "-byte sample_id trailer in " + std::to_string(size) + " bytes");
    }
    return body_end;
  } else {
    body_end = kHeaderSize;  // the fields run up to the trailer at the end
  }
  if (size < body_end + id_hdr_size) {
    return make_error_at(Errc::kTruncated, r.offset,
                         "record of type " + std::to_string(r.header.type) + " has size " +
                             std::to_string(r.header.size) + ", too small for a " +
                             std::to_string(id_hdr_size) + "-byte sample_id trailer");
  }
  return r.header.type == kRecordBpfEvent ? body_end : size - id_hdr_size;
}

// Reads the trailer fields at `start` (the caller checked the bounds).
Result<SampleId> read_trailer(const RecordView& r, const SampleLayout& layout, size_t start) {
  SampleId sid;
  if (layout.id_hdr_size() == 0) return sid;  // no sample_id_all
  ByteCursor c(r.bytes.subspan(start, layout.id_hdr_size()), r.offset + start);
  const uint64_t st = layout.sample_type();
  if (st & PERF_SAMPLE_TID) {
    BPFPROF_ASSIGN_OR_RETURN(sid.pid, c.u32("sample_id.pid"));
    BPFPROF_ASSIGN_OR_RETURN(sid.tid, c.u32("sample_id.tid"));
  }
  if (st & PERF_SAMPLE_TIME) {
    BPFPROF_ASSIGN_OR_RETURN(sid.time, c.u64("sample_id.time"));
  }
  if (st & PERF_SAMPLE_ID) {
    BPFPROF_ASSIGN_OR_RETURN(sid.id, c.u64("sample_id.id"));
  }
  if (st & PERF_SAMPLE_STREAM_ID) {
    BPFPROF_ASSIGN_OR_RETURN(sid.stream_id, c.u64("sample_id.stream_id"));
  }
  if (st & PERF_SAMPLE_CPU) {
    BPFPROF_ASSIGN_OR_RETURN(sid.cpu, c.u32("sample_id.cpu"));
    BPFPROF_TRY(c.skip(4, "sample_id.res"));
  }
  if (st & PERF_SAMPLE_IDENTIFIER) {
    BPFPROF_ASSIGN_OR_RETURN(sid.id, c.u64("sample_id.identifier"));
  }
  return sid;
}

// Splits a kernel record into its own fields, its trailer, and any stale
// bytes after the trailer (only KSYMBOL and BPF_EVENT may have those).
Result<Parts> split(const RecordView& r, const SampleLayout& layout, uint32_t type_a,
                    uint32_t type_b, const char* what) {
  if (r.header.type != type_a && r.header.type != type_b) {
    return make_error_at(Errc::kBadRecord, r.offset,
                         std::string(what) + ": record has type " +
                             std::to_string(r.header.type));
  }
  BPFPROF_TRY(check_whole(r, what));
  const size_t n = layout.id_hdr_size();
  BPFPROF_ASSIGN_OR_RETURN(size_t start, trailer_start(r, n));
  BPFPROF_ASSIGN_OR_RETURN(SampleId sid, read_trailer(r, layout, start));
  Parts p{ByteCursor(r.bytes.subspan(kHeaderSize, start - kHeaderSize), r.offset + kHeaderSize),
          sid, r.bytes.size() - start - n};
  return p;
}

// The fixed fields must end exactly at the trailer.
Status expect_end(const ByteCursor& body, const char* what) {
  if (body.remaining() == 0) return ok_status();
  return make_error_at(Errc::kBadRecord, body.absolute_pos(),
                       std::string(what) + ": " + std::to_string(body.remaining()) +
                           " unexpected bytes before the sample_id trailer");
}

// A NUL-terminated, zero-padded string filling the rest of the body.
Result<std::string_view> rest_string(ByteCursor& body, const char* field) {
  const uint64_t at = body.absolute_pos();
  BPFPROF_ASSIGN_OR_RETURN(Bytes b, body.bytes(body.remaining(), field));
  const char* s = reinterpret_cast<const char*>(b.data());
  const void* nul = b.empty() ? nullptr : std::memchr(s, 0, b.size());
  if (nul == nullptr) {
    return make_error_at(Errc::kBadRecord, at,
                         std::string(field) + ": no NUL before the sample_id trailer");
  }
  return std::string_view(s, static_cast<size_t>(static_cast<const char*>(nul) - s));
}

}  // namespace

Result<RecordView> record_at(Bytes data, size_t offset, uint64_t base_offset) {
  if (offset > data.size()) {
    return make_error_at(Errc::kTruncated, base_offset + offset, "record: offset past the end");
  }
  ByteCursor c(data.subspan(offset), base_offset + offset);
  RecordView r;
  r.offset = base_offset + offset;
  BPFPROF_ASSIGN_OR_RETURN(r.header.type, c.u32("record header.type"));
  BPFPROF_ASSIGN_OR_RETURN(r.header.misc, c.u16("record header.misc"));
  BPFPROF_ASSIGN_OR_RETURN(r.header.size, c.u16("record header.size"));
  if (r.header.size < kHeaderSize) {
    return make_error_at(Errc::kBadRecord, r.offset,
                         "record of type " + std::to_string(r.header.type) + " has size " +
                             std::to_string(r.header.size) + " < 8");
  }
  if (r.header.size > data.size() - offset) {
    return make_error_at(Errc::kTruncated, r.offset,
                         "record of type " + std::to_string(r.header.type) + " has size " +
                             std::to_string(r.header.size) + ", only " +
                             std::to_string(data.size() - offset) + " bytes left");
  }
  r.bytes = data.subspan(offset, r.header.size);
  return r;
}

std::optional<size_t> trailer_offset(const RecordView& r, size_t id_hdr_size) {
  if (r.bytes.size() < kHeaderSize || r.header.type == kRecordSample ||
      r.header.type >= kRecordHeaderAttr)
    return std::nullopt;
  auto start = trailer_start(r, id_hdr_size);
  if (!start.ok()) return std::nullopt;
  return *start;
}

Result<SampleId> parse_sample_id(const RecordView& r, const SampleLayout& layout) {
  BPFPROF_TRY(check_whole(r, "sample_id"));
  // SAMPLE records carry these fields in their body; user types carry none.
  if (r.header.type == kRecordSample || r.header.type >= kRecordHeaderAttr) return SampleId{};
  if (layout.id_hdr_size() == 0) return SampleId{};
  BPFPROF_ASSIGN_OR_RETURN(size_t start, trailer_start(r, layout.id_hdr_size()));
  return read_trailer(r, layout, start);
}

Result<Mmap> Mmap::parse(const RecordView& r, const SampleLayout& layout) {
  BPFPROF_ASSIGN_OR_RETURN(Parts p, split(r, layout, kRecordMmap, kRecordMmap, "MMAP"));
  Mmap m;
  m.sample_id = p.sample_id;
  BPFPROF_ASSIGN_OR_RETURN(m.pid, p.body.u32("MMAP.pid"));
  BPFPROF_ASSIGN_OR_RETURN(m.tid, p.body.u32("MMAP.tid"));
  BPFPROF_ASSIGN_OR_RETURN(m.start, p.body.u64("MMAP.start"));
  BPFPROF_ASSIGN_OR_RETURN(m.len, p.body.u64("MMAP.len"));
  BPFPROF_ASSIGN_OR_RETURN(m.pgoff, p.body.u64("MMAP.pgoff"));
  BPFPROF_ASSIGN_OR_RETURN(m.filename, rest_string(p.body, "MMAP.filename"));
  return m;
}

Result<Mmap2> Mmap2::parse(const RecordView& r, const SampleLayout& layout) {
  BPFPROF_ASSIGN_OR_RETURN(Parts p, split(r, layout, kRecordMmap2, kRecordMmap2, "MMAP2"));
  Mmap2 m;
  m.sample_id = p.sample_id;
  ByteCursor& c = p.body;
  BPFPROF_ASSIGN_OR_RETURN(m.pid, c.u32("MMAP2.pid"));
  BPFPROF_ASSIGN_OR_RETURN(m.tid, c.u32("MMAP2.tid"));
  BPFPROF_ASSIGN_OR_RETURN(m.start, c.u64("MMAP2.start"));
  BPFPROF_ASSIGN_OR_RETURN(m.len, c.u64("MMAP2.len"));
  BPFPROF_ASSIGN_OR_RETURN(m.pgoff, c.u64("MMAP2.pgoff"));
  if (r.header.misc & kMiscMmapBuildId) {
    const uint64_t at = c.absolute_pos();
    BPFPROF_ASSIGN_OR_RETURN(m.build_id_size, c.u8("MMAP2.build_id_size"));
    BPFPROF_TRY(c.skip(3, "MMAP2.build_id pad"));
    BPFPROF_ASSIGN_OR_RETURN(Bytes id, c.bytes(kBuildIdBytes, "MMAP2.build_id"));
    if (m.build_id_size > kBuildIdBytes) {
      return make_error_at(Errc::kBadRecord, at,
                           "MMAP2.build_id_size " + std::to_string(m.build_id_size) + " > 20");
    }
    m.build_id = id.first(m.build_id_size);
  } else {
    BPFPROF_ASSIGN_OR_RETURN(m.maj, c.u32("MMAP2.maj"));
    BPFPROF_ASSIGN_OR_RETURN(m.min, c.u32("MMAP2.min"));
    BPFPROF_ASSIGN_OR_RETURN(m.ino, c.u64("MMAP2.ino"));
    BPFPROF_ASSIGN_OR_RETURN(m.ino_generation, c.u64("MMAP2.ino_generation"));
  }
  BPFPROF_ASSIGN_OR_RETURN(m.prot, c.u32("MMAP2.prot"));
  BPFPROF_ASSIGN_OR_RETURN(m.flags, c.u32("MMAP2.flags"));
  BPFPROF_ASSIGN_OR_RETURN(m.filename, rest_string(c, "MMAP2.filename"));
  return m;
}

Result<Comm> Comm::parse(const RecordView& r, const SampleLayout& layout) {
  BPFPROF_ASSIGN_OR_RETURN(Parts p, split(r, layout, kRecordComm, kRecordComm, "COMM"));
  Comm m;
  m.sample_id = p.sample_id;
  BPFPROF_ASSIGN_OR_RETURN(m.pid, p.body.u32("COMM.pid"));
  BPFPROF_ASSIGN_OR_RETURN(m.tid, p.body.u32("COMM.tid"));
  BPFPROF_ASSIGN_OR_RETURN(m.comm, rest_string(p.body, "COMM.comm"));
  return m;
}

Result<Cgroup> Cgroup::parse(const RecordView& r, const SampleLayout& layout) {
  BPFPROF_ASSIGN_OR_RETURN(Parts p, split(r, layout, kRecordCgroup, kRecordCgroup, "CGROUP"));
  Cgroup m;
  m.sample_id = p.sample_id;
  BPFPROF_ASSIGN_OR_RETURN(m.id, p.body.u64("CGROUP.id"));
  BPFPROF_ASSIGN_OR_RETURN(m.path, rest_string(p.body, "CGROUP.path"));
  return m;
}

Result<ForkExit> ForkExit::parse(const RecordView& r, const SampleLayout& layout) {
  BPFPROF_ASSIGN_OR_RETURN(Parts p, split(r, layout, kRecordFork, kRecordExit, "FORK/EXIT"));
  ForkExit m;
  m.sample_id = p.sample_id;
  BPFPROF_ASSIGN_OR_RETURN(m.pid, p.body.u32("FORK.pid"));
  BPFPROF_ASSIGN_OR_RETURN(m.ppid, p.body.u32("FORK.ppid"));
  BPFPROF_ASSIGN_OR_RETURN(m.tid, p.body.u32("FORK.tid"));
  BPFPROF_ASSIGN_OR_RETURN(m.ptid, p.body.u32("FORK.ptid"));
  BPFPROF_ASSIGN_OR_RETURN(m.time, p.body.u64("FORK.time"));
  BPFPROF_TRY(expect_end(p.body, "FORK/EXIT"));
  return m;
}

Result<Lost> Lost::parse(const RecordView& r, const SampleLayout& layout) {
  BPFPROF_ASSIGN_OR_RETURN(Parts p, split(r, layout, kRecordLost, kRecordLost, "LOST"));
  Lost m;
  m.sample_id = p.sample_id;
  BPFPROF_ASSIGN_OR_RETURN(m.id, p.body.u64("LOST.id"));
  BPFPROF_ASSIGN_OR_RETURN(m.lost, p.body.u64("LOST.lost"));
  BPFPROF_TRY(expect_end(p.body, "LOST"));
  return m;
}

Result<LostSamples> LostSamples::parse(const RecordView& r, const SampleLayout& layout) {
  BPFPROF_ASSIGN_OR_RETURN(
      Parts p, split(r, layout, kRecordLostSamples, kRecordLostSamples, "LOST_SAMPLES"));
  LostSamples m;
  m.sample_id = p.sample_id;
  BPFPROF_ASSIGN_OR_RETURN(m.lost, p.body.u64("LOST_SAMPLES.lost"));
  BPFPROF_TRY(expect_end(p.body, "LOST_SAMPLES"));
  return m;
}

Result<Throttle> Throttle::parse(const RecordView& r, const SampleLayout& layout) {
  BPFPROF_ASSIGN_OR_RETURN(
      Parts p, split(r, layout, kRecordThrottle, kRecordUnthrottle, "THROTTLE"));
  Throttle m;
  m.sample_id = p.sample_id;
  BPFPROF_ASSIGN_OR_RETURN(m.time, p.body.u64("THROTTLE.time"));
  BPFPROF_ASSIGN_OR_RETURN(m.id, p.body.u64("THROTTLE.id"));
  BPFPROF_ASSIGN_OR_RETURN(m.stream_id, p.body.u64("THROTTLE.stream_id"));
  BPFPROF_TRY(expect_end(p.body, "THROTTLE"));
  return m;
}

Result<Ksymbol> Ksymbol::parse(const RecordView& r, const SampleLayout& layout) {
  BPFPROF_ASSIGN_OR_RETURN(Parts p, split(r, layout, kRecordKsymbol, kRecordKsymbol, "KSYMBOL"));
  Ksymbol m;
  m.sample_id = p.sample_id;
  BPFPROF_ASSIGN_OR_RETURN(m.addr, p.body.u64("KSYMBOL.addr"));
  BPFPROF_ASSIGN_OR_RETURN(m.len, p.body.u32("KSYMBOL.len"));
  BPFPROF_ASSIGN_OR_RETURN(m.ksym_type, p.body.u16("KSYMBOL.ksym_type"));
  BPFPROF_ASSIGN_OR_RETURN(m.flags, p.body.u16("KSYMBOL.flags"));
  BPFPROF_ASSIGN_OR_RETURN(m.name, rest_string(p.body, "KSYMBOL.name"));
  m.stale_bytes = p.stale;
  return m;
}

Result<BpfEvent> BpfEvent::parse(const RecordView& r, const SampleLayout& layout) {
  BPFPROF_ASSIGN_OR_RETURN(
      Parts p, split(r, layout, kRecordBpfEvent, kRecordBpfEvent, "BPF_EVENT"));
  BpfEvent m;
  m.sample_id = p.sample_id;
  BPFPROF_ASSIGN_OR_RETURN(m.type, p.body.u16("BPF_EVENT.type"));
  BPFPROF_ASSIGN_OR_RETURN(m.flags, p.body.u16("BPF_EVENT.flags"));
  BPFPROF_ASSIGN_OR_RETURN(m.id, p.body.u32("BPF_EVENT.id"));
  BPFPROF_ASSIGN_OR_RETURN(Bytes tag, p.body.bytes(kBpfTagSize, "BPF_EVENT.tag"));
  std::memcpy(m.tag, tag.data(), kBpfTagSize);
  BPFPROF_TRY(expect_end(p.body, "BPF_EVENT"));
  m.stale_bytes = p.stale;
  return m;
}

namespace {

// A fixed-size text field: its bytes up to the first NUL, which must be there.
Result<std::string_view> fixed_string(ByteCursor& c, size_t n, const char* field) {
  const uint64_t at = c.absolute_pos();
  BPFPROF_ASSIGN_OR_RETURN(Bytes b, c.bytes(n, field));
  const char* s = reinterpret_cast<const char*>(b.data());
  const size_t len = strnlen(s, n);
  if (len == n) {
    return make_error_at(Errc::kBadRecord, at, std::string(field) + ": no NUL in its " +
                                                   std::to_string(n) + " bytes");
  }
  return std::string_view(s, len);
}

}  // namespace

Result<BpfMetadata> BpfMetadata::parse(const RecordView& r) {
  BPFPROF_TRY(check_whole(r, "BPF_METADATA"));
  if (r.header.type != kRecordBpfMetadata) {
    return make_error_at(Errc::kBadRecord, r.offset,
                         "BPF_METADATA: record of type " + std::to_string(r.header.type));
  }
  ByteCursor c(r.bytes.subspan(kHeaderSize), r.offset + kHeaderSize);
  BpfMetadata m;
  BPFPROF_ASSIGN_OR_RETURN(m.prog_name, fixed_string(c, kProgNameLen, "BPF_METADATA.prog_name"));
  const uint64_t count_at = c.absolute_pos();
  BPFPROF_ASSIGN_OR_RETURN(uint64_t n, c.u64("BPF_METADATA.nr_entries"));
  if (n != c.remaining() / (kKeyLen + kValueLen) || c.remaining() % (kKeyLen + kValueLen) != 0) {
    return make_error_at(Errc::kBadRecord, count_at,
                         "BPF_METADATA.nr_entries " + std::to_string(n) + " does not fill the " +
                             std::to_string(c.remaining()) + " bytes after it (" +
                             std::to_string(kKeyLen + kValueLen) + " per entry)");
  }
  m.entries.reserve(n);
  for (uint64_t i = 0; i < n; i++) {
    BPFPROF_ASSIGN_OR_RETURN(std::string_view key, fixed_string(c, kKeyLen, "BPF_METADATA.key"));
    BPFPROF_ASSIGN_OR_RETURN(std::string_view value,
                             fixed_string(c, kValueLen, "BPF_METADATA.value"));
    m.entries.emplace_back(key, value);
  }
  return m;
}

}  // namespace bpfprof::perf
