// SPDX-License-Identifier: Apache-2.0
// SampleLayout: where time and id sit in SAMPLE records (counted from the
// start) and in the sample_id trailer of other records (counted from the
// trailer's start, which trailer_offset finds),
// computed once per attr so the recorder's drain loop never parses a record
// just to order or attribute it.
#include <bit>
#include <cstdio>
#include <string>

#include "perf/records.h"

namespace bpfprof::perf {
namespace {

int has(uint64_t sample_type, uint64_t bit) { return (sample_type & bit) ? 1 : 0; }

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Trailer fields, in the order the kernel writes them (perf_event__output_id_sample).
constexpr uint64_t kTrailerBits = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
                                  PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
                                  PERF_SAMPLE_IDENTIFIER;
constexpr uint64_t kReadFormatLimit61 = 1u << 5;  // PERF_FORMAT_LOST is the last bit

// Fields of Sample::parse_fast: fixed-size u64 words (TID and
// CPU are two u32 in one word), the callchain, and the cgroup id after it.
constexpr uint64_t kFastFields = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
                                 PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |
                                 PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
                                 PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_CGROUP;

}  // namespace

Result<SampleLayout> SampleLayout::from_attr(const perf_event_attr& attr) {
  const uint64_t st = attr.sample_type;
  if (st >= kSampleTypeLimit61) {
    return make_error(Errc::kUnsupported,
                      "sample_type " + hex(st) + " has bits perf 6.1 does not know");
  }
  if (attr.read_format >= kReadFormatLimit61) {
    return make_error(Errc::kUnsupported,
                      "read_format " + hex(attr.read_format) + " has unknown bits");
  }
  if ((st & PERF_SAMPLE_WEIGHT_TYPE) == PERF_SAMPLE_WEIGHT_TYPE) {
    return make_error(Errc::kUnsupported, "sample_type sets both WEIGHT and WEIGHT_STRUCT");
  }
  SampleLayout l;
  l.sample_type_ = st;
  l.read_format_ = attr.read_format;
  l.regs_user_ = attr.sample_regs_user;
  l.regs_intr_ = attr.sample_regs_intr;
  l.branch_sample_type_ = attr.branch_sample_type;
  l.sample_id_all_ = attr.sample_id_all != 0;

  const int ident = has(st, PERF_SAMPLE_IDENTIFIER);
  if (st & PERF_SAMPLE_TIME) {
    l.sample_time_off_ =
        8 * (1 + ident + has(st, PERF_SAMPLE_IP) + has(st, PERF_SAMPLE_TID));
  }
  if (ident) {
    l.sample_id_off_ = 8;
  } else if (st & PERF_SAMPLE_ID) {
    l.sample_id_off_ = 8 * (1 + has(st, PERF_SAMPLE_IP) + has(st, PERF_SAMPLE_TID) +
                            has(st, PERF_SAMPLE_TIME) + has(st, PERF_SAMPLE_ADDR));
  }

  if (l.sample_id_all_) {
    l.id_hdr_size_ = 8 * static_cast<size_t>(std::popcount(st & kTrailerBits));
    // Offsets from the trailer's start (TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER).
    const int tid = has(st, PERF_SAMPLE_TID);
    if (st & PERF_SAMPLE_TIME) l.trailer_time_off_ = 8 * tid;
    if (ident) {
      l.trailer_id_off_ = static_cast<int>(l.id_hdr_size_) - 8;
    } else if (st & PERF_SAMPLE_ID) {
      l.trailer_id_off_ = 8 * (tid + has(st, PERF_SAMPLE_TIME));
    }
  }
  if ((st & ~kFastFields) == 0) {
    l.fast_fixed_bytes_ =
        8 * std::popcount(st & ~uint64_t{PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_CGROUP});
  }
  return l;
}


std::optional<uint64_t> SampleLayout::trailer_field(const RecordView& r, int off) const {
  // User types (>= 64) never carry a trailer; a record too small for one is not trusted.
  if (off < 0 || r.header.type >= kRecordHeaderAttr) return std::nullopt;
  std::optional<size_t> start = trailer_offset(r, id_hdr_size_);
  if (!start) return std::nullopt;
  return load_unaligned<uint64_t>(r.bytes.data() + *start + off);
}

}  // namespace bpfprof::perf
