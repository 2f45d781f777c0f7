// SPDX-License-Identifier: Apache-2.0
#include "perfdata/owners_feature.h"

#include <algorithm>
#include <cstring>

namespace bpfprof::perfdata {
namespace {

constexpr uint32_t kVersion = 1;
constexpr uint32_t kEntryV1 = 32;  // without cgroup_id
constexpr uint32_t kEntry = 40;
constexpr uint32_t kLoaderEntry = 16;
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
    append_pod(out, h.cgroup_id);
  }
  append_pod(out, static_cast<uint32_t>(s.loaders.size()));
  append_pod(out, kLoaderEntry);
  for (const ProgramLoader& l : s.loaders) {
    append_pod(out, l.prog_id);
    append_pod(out, uint32_t{0});
    append_pod(out, l.cgroup_id);
  }
  return out;
}

namespace {

// `count` entries of `entry_size` bytes must fit in what is left.
Status entries_fit(const ByteCursor& c, uint32_t count, uint32_t entry_size, const char* what) {
  if (count <= c.remaining() / entry_size) return ok_status();
  return make_error_at(Errc::kTruncated, c.absolute_pos(),
                       std::string(what) + ": " + std::to_string(count) + " entries of " +
                           std::to_string(entry_size) + " bytes, " + std::to_string(c.remaining()) +
                           " left");
}

Status read_loaders(ByteCursor& c, OwnersSection& s) {
  BPFPROF_ASSIGN_OR_RETURN(uint32_t count, c.u32("OWNERS loaders"));
  BPFPROF_ASSIGN_OR_RETURN(uint32_t entry_size, c.u32("OWNERS loader_entry_size"));
  if (entry_size < kLoaderEntry) {
    return make_error_at(Errc::kBadRecord, c.absolute_pos() - 4,
                         "OWNERS loader_entry_size " + std::to_string(entry_size) + " below 16");
  }
  BPFPROF_TRY(entries_fit(c, count, entry_size, "OWNERS loaders"));
  s.loaders.resize(count);
  for (ProgramLoader& l : s.loaders) {
    BPFPROF_ASSIGN_OR_RETURN(Bytes entry, c.bytes(entry_size, "OWNERS loader"));
    ByteCursor e(entry, c.absolute_pos() - entry_size);
    BPFPROF_ASSIGN_OR_RETURN(l.prog_id, e.u32("OWNERS loader prog_id"));
    BPFPROF_TRY(e.skip(4, "OWNERS loader padding"));
    BPFPROF_ASSIGN_OR_RETURN(l.cgroup_id, e.u64("OWNERS loader cgroup_id"));
  }
  return ok_status();
}

}  // namespace

Result<OwnersSection> decode_owners(Bytes section, uint64_t base_offset) {
  ByteCursor c(section, base_offset);
  BPFPROF_ASSIGN_OR_RETURN(uint32_t version, c.u32("OWNERS version"));
  if (version != kVersion) {
    return make_error_at(Errc::kUnsupported, c.absolute_pos() - 4,
                         "OWNERS version " + std::to_string(version) + " (we read 1)");
  }
  BPFPROF_ASSIGN_OR_RETURN(uint32_t entry_size, c.u32("OWNERS entry_size"));
  if (entry_size < kEntryV1) {
    return make_error_at(Errc::kBadRecord, c.absolute_pos() - 4,
                         "OWNERS entry_size " + std::to_string(entry_size) + " below 32");
  }
  BPFPROF_ASSIGN_OR_RETURN(uint32_t scanned, c.u32("OWNERS scanned"));
  BPFPROF_ASSIGN_OR_RETURN(uint32_t count, c.u32("OWNERS count"));
  OwnersSection s;
  BPFPROF_ASSIGN_OR_RETURN(Bytes ids, c.array<uint32_t>(uint64_t{scanned} + scanned % 2, "OWNERS scanned ids"));
  s.scanned.resize(scanned);
  for (uint32_t i = 0; i < scanned; i++) s.scanned[i] = load_unaligned<uint32_t>(ids.data() + 4 * i);
  BPFPROF_TRY(entries_fit(c, count, entry_size, "OWNERS"));
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
    if (entry_size >= kEntry) {
      BPFPROF_ASSIGN_OR_RETURN(h.cgroup_id, e.u64("OWNERS cgroup_id"));
    }
  }
  // The loader table came later: a section that ends here has none.
  if (c.remaining() > 0) {
    BPFPROF_TRY(read_loaders(c, s));
  }
  return s;
}

}  // namespace bpfprof::perfdata
