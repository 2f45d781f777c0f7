// SPDX-License-Identifier: Apache-2.0
#include "perfdata/owners_feature.h"

#include <algorithm>
#include <cstring>

namespace bpfprof::perfdata {
namespace {

constexpr uint32_t kVersion = 1;
constexpr uint32_t kEntry = 32;
constexpr size_t kComm = 16;

}  // namespace

std::vector<std::byte> encode_owners(const OwnersSection& s) {
  std::vector<std::byte> out;
  append_pod(out, kVersion);
  append_pod(out, kEntry);
  append_pod(out, static_cast<uint32_t>(s.scanned.size()));
  append_pod(out, static_cast<uint32_t>(s.holders.size()));
  for (uint32_t id : s.scanned) append_pod(out, id);
  if (s.scanned.size() % 2) append_pod(out, uint32_t{0});
  for (const ProgramHolder& h : s.holders) {
    append_pod(out, h.prog_id);
    append_pod(out, h.pid);
    append_pod(out, h.flags);
    append_pod(out, uint32_t{0});
    char comm[kComm] = {};
    std::memcpy(comm, h.comm.data(), std::min(h.comm.size(), kComm - 1));
    append_pod(out, comm);
  }
  return out;
}

Result<OwnersSection> decode_owners(Bytes section, uint64_t base_offset) {
  ByteCursor c(section, base_offset);
  BPFPROF_ASSIGN_OR_RETURN(uint32_t version, c.u32("OWNERS version"));
  if (version != kVersion) {
    return make_error_at(Errc::kUnsupported, c.absolute_pos() - 4,
                         "OWNERS version " + std::to_string(version) + " (we read 1)");
  }
  BPFPROF_ASSIGN_OR_RETURN(uint32_t entry_size, c.u32("OWNERS entry_size"));
  if (entry_size < kEntry) {
    return make_error_at(Errc::kBadRecord, c.absolute_pos() - 4,
                         "OWNERS entry_size " + std::to_string(entry_size) + " below 32");
  }
  BPFPROF_ASSIGN_OR_RETURN(uint32_t scanned, c.u32("OWNERS scanned"));
  BPFPROF_ASSIGN_OR_RETURN(uint32_t count, c.u32("OWNERS count"));
  OwnersSection s;
  BPFPROF_ASSIGN_OR_RETURN(Bytes ids, c.array<uint32_t>(uint64_t{scanned} + scanned % 2, "OWNERS scanned ids"));
  s.scanned.resize(scanned);
  for (uint32_t i = 0; i < scanned; i++) s.scanned[i] = load_unaligned<uint32_t>(ids.data() + 4 * i);
  if (count > c.remaining() / entry_size) {
    return make_error_at(Errc::kTruncated, c.absolute_pos(),
                         "OWNERS: " + std::to_string(count) + " entries of " +
                             std::to_string(entry_size) + " bytes, " +
                             std::to_string(c.remaining()) + " left");
  }
  s.holders.resize(count);
  for (ProgramHolder& h : s.holders) {
    BPFPROF_ASSIGN_OR_RETURN(Bytes entry, c.bytes(entry_size, "OWNERS entry"));
    ByteCursor e(entry, c.absolute_pos() - entry_size);
    BPFPROF_ASSIGN_OR_RETURN(h.prog_id, e.u32("OWNERS prog_id"));
    BPFPROF_ASSIGN_OR_RETURN(h.pid, e.u32("OWNERS pid"));
    BPFPROF_ASSIGN_OR_RETURN(h.flags, e.u32("OWNERS flags"));
    BPFPROF_TRY(e.skip(4, "OWNERS padding"));
    BPFPROF_ASSIGN_OR_RETURN(Bytes comm, e.bytes(kComm, "OWNERS comm"));
    const char* p = reinterpret_cast<const char*>(comm.data());
    h.comm.assign(p, strnlen(p, kComm));
  }
  return s;
}

}  // namespace bpfprof::perfdata
