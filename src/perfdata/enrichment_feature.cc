// SPDX-License-Identifier: Apache-2.0
// Features 251 (enrichment) and 252 (run statistics). Layouts, all
// little-endian like the rest of the file:
//   251: u32 version (2), u32 entry_size (32), u32 path, u32 sched,
//        i32 in_kernel_errno, u16 threads, u16 pinned, u64 lost, u64 errors,
//        [version 2: u64 capture_lost, u32 refused_len, u32 0, refused_len bytes
//         of text padded to 8,] u32 count, u32 0,
//        count x {u32 id, u32 flags, u64 load_ns, u64 acquired_ns, u64 hold_ns}
//   252: u32 version (1), u32 entry_size (56), u64 poll_interval_ns,
//        u64 enabled_ns, u64 disabled_ns, u32 count, u32 0,
//        count x {u32 id, u32 flags, u64 first_ns, u64 first_run_cnt,
//                 u64 first_run_time_ns, u64 last_ns, u64 last_run_cnt,
//                 u64 last_run_time_ns}
#include "perfdata/enrichment_feature.h"

#include <algorithm>
#include <string>

namespace bpfprof::perfdata {
namespace {

constexpr uint32_t kVersion = 1;  // of section 252
constexpr uint32_t kEnrichmentVersion = 2;
constexpr uint32_t kMaxRefusedLen = 4096;
constexpr uint32_t kEnrichmentEntry = 32;
constexpr uint32_t kRunStatsEntry = 56;

Result<uint32_t> read_header(ByteCursor& c, const char* name, uint32_t min_entry,
                             uint32_t max_version, uint32_t* version_out = nullptr) {
  BPFPROF_ASSIGN_OR_RETURN(uint32_t version, c.u32(std::string(name) + " version"));
  if (version < 1 || version > max_version) {
    return make_error_at(Errc::kUnsupported, c.absolute_pos() - 4,
                         std::string(name) + " version " + std::to_string(version) +
                             " (we read 1 to " + std::to_string(max_version) + ")");
  }
  if (version_out) *version_out = version;
  BPFPROF_ASSIGN_OR_RETURN(uint32_t entry_size, c.u32(std::string(name) + " entry_size"));
  if (entry_size < min_entry) {
    return make_error_at(Errc::kBadRecord, c.absolute_pos() - 4,
                         std::string(name) + " entry_size " + std::to_string(entry_size) +
                             " below " + std::to_string(min_entry));
  }
  return entry_size;
}

Result<uint32_t> read_count(ByteCursor& c, const char* name, uint32_t entry_size) {
  BPFPROF_ASSIGN_OR_RETURN(uint32_t count, c.u32(std::string(name) + " count"));
  BPFPROF_TRY(c.skip(4, std::string(name) + " padding"));
  if (count > c.remaining() / entry_size) {
    return make_error_at(Errc::kTruncated, c.absolute_pos(),
                         std::string(name) + ": " + std::to_string(count) + " entries of " +
                             std::to_string(entry_size) + " bytes, " +
                             std::to_string(c.remaining()) + " left");
  }
  return count;
}

uint64_t delta(uint64_t last, uint64_t first) { return last > first ? last - first : 0; }

}  // namespace

size_t EnrichmentSection::count(uint32_t flag) const {
  return static_cast<size_t>(std::count_if(programs.begin(), programs.end(),
                                           [&](const auto& p) { return p.has(flag); }));
}

bool ProgramRunStats::measured() const {
  return !has(kLoadedDuring) || has(kReadAtEnd) || last_ns > first_ns;
}

uint64_t ProgramRunStats::run_cnt() const {
  return has(kLoadedDuring) ? last_run_cnt : delta(last_run_cnt, first_run_cnt);
}

uint64_t ProgramRunStats::run_time_ns() const {
  return has(kLoadedDuring) ? last_run_time_ns : delta(last_run_time_ns, first_run_time_ns);
}

const char* sched_name(EnricherSched s) {
  switch (s) {
    case EnricherSched::kFifo:
      return "SCHED_FIFO";
    case EnricherSched::kOtherNice:
      return "SCHED_OTHER, nice -20";
    case EnricherSched::kOther:
      break;
  }
  return "SCHED_OTHER";
}

std::vector<std::byte> encode_enrichment(const EnrichmentSection& s) {
  std::vector<std::byte> out;
  append_pod(out, kEnrichmentVersion);
  append_pod(out, kEnrichmentEntry);
  append_pod(out, static_cast<uint32_t>(s.path));
  append_pod(out, static_cast<uint32_t>(s.sched));
  append_pod(out, s.in_kernel_errno);
  append_pod(out, s.threads);
  append_pod(out, static_cast<uint16_t>(s.pinned ? 1 : 0));
  append_pod(out, s.lost);
  append_pod(out, s.errors);
  append_pod(out, s.capture_lost);
  const std::string refused = s.capture_refused.substr(0, kMaxRefusedLen);
  append_pod(out, static_cast<uint32_t>(refused.size()));
  append_pod(out, uint32_t{0});
  for (char ch : refused) out.push_back(static_cast<std::byte>(ch));
  out.resize((out.size() + 7) & ~size_t{7});
  append_pod(out, static_cast<uint32_t>(s.programs.size()));
  append_pod(out, uint32_t{0});
  for (const EnrichedProgramEntry& p : s.programs) {
    append_pod(out, p.id);
    append_pod(out, p.flags);
    append_pod(out, p.load_ns);
    append_pod(out, p.acquired_ns);
    append_pod(out, p.hold_ns);
  }
  return out;
}

Result<EnrichmentSection> decode_enrichment(Bytes section, uint64_t base_offset) {
  ByteCursor c(section, base_offset);
  EnrichmentSection s;
  BPFPROF_ASSIGN_OR_RETURN(uint32_t entry_size, read_header(c, "ENRICHMENT", kEnrichmentEntry,
                                                            kEnrichmentVersion, &s.version));
  BPFPROF_ASSIGN_OR_RETURN(uint32_t path, c.u32("ENRICHMENT path"));
  BPFPROF_ASSIGN_OR_RETURN(uint32_t sched, c.u32("ENRICHMENT sched"));
  if (path > 1 || sched > 2) {
    return make_error_at(Errc::kBadRecord, base_offset + 8,
                         "ENRICHMENT path " + std::to_string(path) + ", sched " + std::to_string(sched));
  }
  s.path = static_cast<EnrichmentPath>(path);
  s.sched = static_cast<EnricherSched>(sched);
  BPFPROF_ASSIGN_OR_RETURN(s.in_kernel_errno, c.read<int32_t>("ENRICHMENT in_kernel_errno"));
  BPFPROF_ASSIGN_OR_RETURN(s.threads, c.u16("ENRICHMENT threads"));
  BPFPROF_ASSIGN_OR_RETURN(uint16_t pinned, c.u16("ENRICHMENT pinned"));
  s.pinned = pinned != 0;
  BPFPROF_ASSIGN_OR_RETURN(s.lost, c.u64("ENRICHMENT lost"));
  BPFPROF_ASSIGN_OR_RETURN(s.errors, c.u64("ENRICHMENT errors"));
  if (s.version >= 2) {
    BPFPROF_ASSIGN_OR_RETURN(s.capture_lost, c.u64("ENRICHMENT capture_lost"));
    BPFPROF_ASSIGN_OR_RETURN(uint32_t len, c.u32("ENRICHMENT refused_len"));
    BPFPROF_TRY(c.skip(4, "ENRICHMENT padding"));
    if (len > kMaxRefusedLen) {
      return make_error_at(Errc::kBadRecord, c.absolute_pos() - 8,
                           "ENRICHMENT refused_len " + std::to_string(len) + " above " +
                               std::to_string(kMaxRefusedLen));
    }
    BPFPROF_ASSIGN_OR_RETURN(Bytes text, c.bytes((len + 7) & ~uint32_t{7}, "ENRICHMENT refused"));
    s.capture_refused.assign(reinterpret_cast<const char*>(text.data()), len);
  }
  BPFPROF_ASSIGN_OR_RETURN(uint32_t count, read_count(c, "ENRICHMENT", entry_size));
  s.programs.resize(count);
  for (EnrichedProgramEntry& p : s.programs) {
    BPFPROF_ASSIGN_OR_RETURN(Bytes entry, c.bytes(entry_size, "ENRICHMENT entry"));
    ByteCursor e(entry, c.absolute_pos() - entry_size);
    BPFPROF_ASSIGN_OR_RETURN(p.id, e.u32("ENRICHMENT id"));
    BPFPROF_ASSIGN_OR_RETURN(p.flags, e.u32("ENRICHMENT flags"));
    BPFPROF_ASSIGN_OR_RETURN(p.load_ns, e.u64("ENRICHMENT load_ns"));
    BPFPROF_ASSIGN_OR_RETURN(p.acquired_ns, e.u64("ENRICHMENT acquired_ns"));
    BPFPROF_ASSIGN_OR_RETURN(p.hold_ns, e.u64("ENRICHMENT hold_ns"));
  }
  return s;
}

std::vector<std::byte> encode_run_stats(const RunStatsSection& s) {
  std::vector<std::byte> out;
  append_pod(out, kVersion);
  append_pod(out, kRunStatsEntry);
  append_pod(out, s.poll_interval_ns);
  append_pod(out, s.enabled_ns);
  append_pod(out, s.disabled_ns);
  append_pod(out, static_cast<uint32_t>(s.programs.size()));
  append_pod(out, uint32_t{0});
  for (const ProgramRunStats& p : s.programs) {
    append_pod(out, p.id);
    append_pod(out, p.flags);
    for (uint64_t v : {p.first_ns, p.first_run_cnt, p.first_run_time_ns, p.last_ns, p.last_run_cnt,
                       p.last_run_time_ns}) {
      append_pod(out, v);
    }
  }
  return out;
}

Result<RunStatsSection> decode_run_stats(Bytes section, uint64_t base_offset) {
  ByteCursor c(section, base_offset);
  BPFPROF_ASSIGN_OR_RETURN(uint32_t entry_size, read_header(c, "RUN_STATS", kRunStatsEntry, kVersion));
  RunStatsSection s;
  BPFPROF_ASSIGN_OR_RETURN(s.poll_interval_ns, c.u64("RUN_STATS poll_interval_ns"));
  BPFPROF_ASSIGN_OR_RETURN(s.enabled_ns, c.u64("RUN_STATS enabled_ns"));
  BPFPROF_ASSIGN_OR_RETURN(s.disabled_ns, c.u64("RUN_STATS disabled_ns"));
  BPFPROF_ASSIGN_OR_RETURN(uint32_t count, read_count(c, "RUN_STATS", entry_size));
  s.programs.resize(count);
  for (ProgramRunStats& p : s.programs) {
    BPFPROF_ASSIGN_OR_RETURN(Bytes entry, c.bytes(entry_size, "RUN_STATS entry"));
    ByteCursor e(entry, c.absolute_pos() - entry_size);
    BPFPROF_ASSIGN_OR_RETURN(p.id, e.u32("RUN_STATS id"));
    BPFPROF_ASSIGN_OR_RETURN(p.flags, e.u32("RUN_STATS flags"));
    for (uint64_t* v : {&p.first_ns, &p.first_run_cnt, &p.first_run_time_ns, &p.last_ns,
                        &p.last_run_cnt, &p.last_run_time_ns}) {
      BPFPROF_ASSIGN_OR_RETURN(*v, e.u64("RUN_STATS value"));
    }
  }
  return s;
}

}  // namespace bpfprof::perfdata
