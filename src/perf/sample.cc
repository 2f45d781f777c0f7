// SPDX-License-Identifier: Apache-2.0
// Sample::parse: walks sample_type bits in ABI order (perf-data-format.md 5.3,
// the order of perf_output_sample in kernel/events/core.c). Fields bpfprof does
// not use are skipped, but each skip is bounds-checked, because a wrong length
// here shifts every field after it.
#include <bit>
#include <string>

#include "perf/records.h"

namespace bpfprof::perf {
namespace {

constexpr uint64_t kFormatTimes = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;

struct BranchEntry {  // from, to, flags
  uint64_t words[3];
};
static_assert(sizeof(BranchEntry) == 24);

int count(uint64_t read_format, uint64_t bit) { return (read_format & bit) ? 1 : 0; }

// READ values: GROUP { nr, [enabled], [running], {value, [id], [lost]}[nr] }
// or { value, [enabled], [running], [id], [lost] }.
Status skip_read_values(ByteCursor& c, uint64_t rf) {
  const uint64_t times = static_cast<uint64_t>(std::popcount(rf & kFormatTimes));
  const uint64_t per_value =
      1 + count(rf, PERF_FORMAT_ID) + count(rf, PERF_FORMAT_LOST);
  if (rf & PERF_FORMAT_GROUP) {
    BPFPROF_ASSIGN_OR_RETURN(uint64_t nr, c.u64("SAMPLE.read.nr"));
    BPFPROF_TRY(c.array<uint64_t>(times, "SAMPLE.read.times"));
    // per_value <= 3, so nr * per_value cannot overflow once nr fits the record;
    // a larger nr fails the bounds check either way.
    const uint64_t words = nr > c.remaining() ? nr : nr * per_value;
    BPFPROF_TRY(c.array<uint64_t>(words, "SAMPLE.read.values"));
    return ok_status();
  }
  BPFPROF_TRY(c.array<uint64_t>(per_value + times, "SAMPLE.read"));
  return ok_status();
}

// REGS_USER / REGS_INTR: u64 abi; u64 regs[popcount(mask)] only if abi != 0.
Status skip_regs(ByteCursor& c, uint64_t mask, const char* abi_field, const char* regs_field) {
  BPFPROF_ASSIGN_OR_RETURN(uint64_t abi, c.u64(abi_field));
  if (abi != 0) BPFPROF_TRY(c.array<uint64_t>(std::popcount(mask), regs_field));
  return ok_status();
}

Status skip_u64(ByteCursor& c, const char* field) { return c.skip(8, field); }

}  // namespace

bool Sample::parse_fast(const RecordView& r, const SampleLayout& layout, Sample& s) {
  const int fixed_bytes = layout.fast_fixed_bytes();
  if (fixed_bytes < 0 || r.header.type != kRecordSample || r.bytes.size() != r.header.size ||
      r.bytes.size() < sizeof(RecordHeader)) {
    return false;
  }
  // Fixed u64 fields, then the callchain and nothing after it: one bounds
  // check for the fixed part, one for the chain.
  const uint64_t st = layout.sample_type();
  const size_t fixed = static_cast<size_t>(fixed_bytes);
  const size_t chain_nr = (st & PERF_SAMPLE_CALLCHAIN) ? 8 : 0;
  const size_t tail = (st & PERF_SAMPLE_CGROUP) ? 8 : 0;
  const size_t body = r.bytes.size() - sizeof(RecordHeader);
  if (body < fixed + chain_nr + tail) return false;
  const std::byte* p = r.bytes.data() + sizeof(RecordHeader);
  auto next = [&p] {
    const uint64_t v = load_unaligned<uint64_t>(p);
    p += 8;
    return v;
  };
  // Every field reset, one store each: `s = Sample{}` compiled to a string
  // store that was half of this function's time.
  static_assert(sizeof(Sample) == 104, "a new Sample field is reset here too");
  s.id = s.ip = s.time = s.addr = s.stream_id = s.period = s.cgroup = 0;
  s.pid = s.tid = s.cpu = 0;
  s.callchain = {};
  s.raw = {};
  if (st & PERF_SAMPLE_IDENTIFIER) s.id = next();
  if (st & PERF_SAMPLE_IP) s.ip = next();
  if (st & PERF_SAMPLE_TID) {
    s.pid = load_unaligned<uint32_t>(p);
    s.tid = load_unaligned<uint32_t>(p + 4);
    p += 8;
  }
  if (st & PERF_SAMPLE_TIME) s.time = next();
  if (st & PERF_SAMPLE_ADDR) s.addr = next();
  if (st & PERF_SAMPLE_ID) s.id = next();
  if (st & PERF_SAMPLE_STREAM_ID) s.stream_id = next();
  if (st & PERF_SAMPLE_CPU) s.cpu = static_cast<uint32_t>(next());
  if (st & PERF_SAMPLE_PERIOD) s.period = next();
  const size_t left = body - fixed - chain_nr - tail;
  if (tail != 0) s.cgroup = load_unaligned<uint64_t>(p + chain_nr + left);
  if (chain_nr == 0) return left == 0;
  const uint64_t nr = next();
  if (left % 8 != 0 || nr != left / 8) return false;
  s.callchain = U64Array(Bytes(p, left));
  return true;
}

Result<Sample> Sample::parse(const RecordView& r, const SampleLayout& layout) {
  if (r.header.type != kRecordSample || r.bytes.size() < sizeof(RecordHeader) ||
      r.bytes.size() != r.header.size) {
    return make_error_at(Errc::kBadRecord, r.offset,
                         "SAMPLE: record of type " + std::to_string(r.header.type) + " size " +
                             std::to_string(r.header.size) + " over " +
                             std::to_string(r.bytes.size()) + " bytes");
  }
  const uint64_t st = layout.sample_type();
  if (st >= kSampleTypeLimit61) {
    return make_error_at(Errc::kUnsupported, r.offset, "SAMPLE: sample_type has unknown bits");
  }
  {
    Sample s;
    if (parse_fast(r, layout, s)) return s;
    // Otherwise the general walk below names the field that does not fit.
  }
  ByteCursor c(r.bytes.subspan(sizeof(RecordHeader)), r.offset + sizeof(RecordHeader));
  Sample s;
  if (st & PERF_SAMPLE_IDENTIFIER) {
    BPFPROF_ASSIGN_OR_RETURN(s.id, c.u64("SAMPLE.identifier"));
  }
  if (st & PERF_SAMPLE_IP) {
    BPFPROF_ASSIGN_OR_RETURN(s.ip, c.u64("SAMPLE.ip"));
  }
  if (st & PERF_SAMPLE_TID) {
    BPFPROF_ASSIGN_OR_RETURN(s.pid, c.u32("SAMPLE.pid"));
    BPFPROF_ASSIGN_OR_RETURN(s.tid, c.u32("SAMPLE.tid"));
  }
  if (st & PERF_SAMPLE_TIME) {
    BPFPROF_ASSIGN_OR_RETURN(s.time, c.u64("SAMPLE.time"));
  }
  if (st & PERF_SAMPLE_ADDR) {
    BPFPROF_ASSIGN_OR_RETURN(s.addr, c.u64("SAMPLE.addr"));
  }
  if (st & PERF_SAMPLE_ID) {
    BPFPROF_ASSIGN_OR_RETURN(s.id, c.u64("SAMPLE.id"));
  }
  if (st & PERF_SAMPLE_STREAM_ID) {
    BPFPROF_ASSIGN_OR_RETURN(s.stream_id, c.u64("SAMPLE.stream_id"));
  }
  if (st & PERF_SAMPLE_CPU) {
    BPFPROF_ASSIGN_OR_RETURN(s.cpu, c.u32("SAMPLE.cpu"));
    BPFPROF_TRY(c.skip(4, "SAMPLE.cpu.res"));
  }
  if (st & PERF_SAMPLE_PERIOD) {
    BPFPROF_ASSIGN_OR_RETURN(s.period, c.u64("SAMPLE.period"));
  }
  if (st & PERF_SAMPLE_READ) BPFPROF_TRY(skip_read_values(c, layout.read_format()));
  if (st & PERF_SAMPLE_CALLCHAIN) {
    BPFPROF_ASSIGN_OR_RETURN(uint64_t nr, c.u64("SAMPLE.callchain.nr"));
    BPFPROF_ASSIGN_OR_RETURN(Bytes ips, c.array<uint64_t>(nr, "SAMPLE.callchain.ips"));
    s.callchain = U64Array(ips);
  }
  if (st & PERF_SAMPLE_RAW) {
    BPFPROF_ASSIGN_OR_RETURN(uint32_t size, c.u32("SAMPLE.raw.size"));
    BPFPROF_ASSIGN_OR_RETURN(s.raw, c.bytes(size, "SAMPLE.raw.data"));
  }
  if (st & PERF_SAMPLE_BRANCH_STACK) {
    BPFPROF_ASSIGN_OR_RETURN(uint64_t nr, c.u64("SAMPLE.branch_stack.nr"));
    if (layout.branch_sample_type() & PERF_SAMPLE_BRANCH_HW_INDEX) {
      BPFPROF_TRY(skip_u64(c, "SAMPLE.branch_stack.hw_idx"));
    }
    BPFPROF_TRY(c.array<BranchEntry>(nr, "SAMPLE.branch_stack.entries"));
  }
  if (st & PERF_SAMPLE_REGS_USER) {
    BPFPROF_TRY(skip_regs(c, layout.sample_regs_user(), "SAMPLE.regs_user.abi",
                          "SAMPLE.regs_user.regs"));
  }
  if (st & PERF_SAMPLE_STACK_USER) {
    BPFPROF_ASSIGN_OR_RETURN(uint64_t size, c.u64("SAMPLE.stack_user.size"));
    if (size != 0) {
      BPFPROF_TRY(c.array<uint8_t>(size, "SAMPLE.stack_user.data"));
      BPFPROF_TRY(skip_u64(c, "SAMPLE.stack_user.dyn_size"));
    }
  }
  if (st & PERF_SAMPLE_WEIGHT_TYPE) BPFPROF_TRY(skip_u64(c, "SAMPLE.weight"));
  if (st & PERF_SAMPLE_DATA_SRC) BPFPROF_TRY(skip_u64(c, "SAMPLE.data_src"));
  if (st & PERF_SAMPLE_TRANSACTION) BPFPROF_TRY(skip_u64(c, "SAMPLE.transaction"));
  if (st & PERF_SAMPLE_REGS_INTR) {
    BPFPROF_TRY(skip_regs(c, layout.sample_regs_intr(), "SAMPLE.regs_intr.abi",
                          "SAMPLE.regs_intr.regs"));
  }
  if (st & PERF_SAMPLE_PHYS_ADDR) BPFPROF_TRY(skip_u64(c, "SAMPLE.phys_addr"));
  if (st & PERF_SAMPLE_CGROUP) {
    BPFPROF_ASSIGN_OR_RETURN(s.cgroup, c.u64("SAMPLE.cgroup"));
  }
  if (st & PERF_SAMPLE_DATA_PAGE_SIZE) BPFPROF_TRY(skip_u64(c, "SAMPLE.data_page_size"));
  if (st & PERF_SAMPLE_CODE_PAGE_SIZE) BPFPROF_TRY(skip_u64(c, "SAMPLE.code_page_size"));
  if (st & PERF_SAMPLE_AUX) {
    BPFPROF_ASSIGN_OR_RETURN(uint64_t size, c.u64("SAMPLE.aux.size"));
    BPFPROF_TRY(c.array<uint8_t>(size, "SAMPLE.aux.data"));
  }
  if (c.remaining() != 0) {
    return make_error_at(Errc::kBadRecord, c.absolute_pos(),
                         "SAMPLE: " + std::to_string(c.remaining()) +
                             " bytes left after the last field of sample_type");
  }
  return s;
}

}  // namespace bpfprof::perf
