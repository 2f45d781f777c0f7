// SPDX-License-Identifier: Apache-2.0
#include "perfdata/attach_feature.h"

#include <algorithm>
#include <cstring>

namespace bpfprof::perfdata {
namespace {

constexpr uint32_t kVersion = 1;
constexpr uint32_t kEntryHeader = 24;
constexpr uint32_t kMaxPoint = 64 * 1024;
constexpr size_t kCommSize = 16;
constexpr uint32_t kHolderSize = 8 + kCommSize;

}  // namespace

std::vector<std::byte> encode_attach(const AttachSection& s) {
  std::vector<std::byte> out;
  append_pod(out, kVersion);
  append_pod(out, static_cast<uint32_t>(s.entries.size()));
  for (const AttachEntry& e : s.entries) {
    const std::string point = e.point.substr(0, kMaxPoint - 1);
    const auto len = static_cast<uint32_t>((point.size() + 1 + 7) / 8 * 8);
    append_pod(out, e.prog_id);
    append_pod(out, e.link_id);
    append_pod(out, e.source);
    append_pod(out, len);
    append_pod(out, e.time_ns);
    const size_t at = out.size();
    out.resize(at + len);
    std::memcpy(out.data() + at, point.data(), point.size());
  }
  append_pod(out, s.links_lost);
  append_pod(out, s.perf_fds_lost);
  append_pod(out, s.fd_dirs_unreadable);
  uint32_t holders = 0;
  for (const AttachEntry& e : s.entries) holders += e.pid != 0;
  append_pod(out, holders);
  append_pod(out, uint32_t{0});
  for (uint32_t i = 0; i < s.entries.size(); i++) {
    const AttachEntry& e = s.entries[i];
    if (e.pid == 0) continue;
    append_pod(out, i);
    append_pod(out, e.pid);
    char comm[kCommSize] = {};
    std::memcpy(comm, e.comm.data(), std::min(e.comm.size(), kCommSize - 1));
    const size_t at = out.size();
    out.resize(at + kCommSize);
    std::memcpy(out.data() + at, comm, kCommSize);
  }
  return out;
}

Result<AttachSection> decode_attach(Bytes section, uint64_t base_offset) {
  ByteCursor c(section, base_offset);
  BPFPROF_ASSIGN_OR_RETURN(uint32_t version, c.u32("ATTACH version"));
  if (version != kVersion) {
    return make_error_at(Errc::kUnsupported, c.absolute_pos() - 4,
                         "ATTACH version " + std::to_string(version) + " (we read 1)");
  }
  BPFPROF_ASSIGN_OR_RETURN(uint32_t count, c.u32("ATTACH count"));
  if (count > c.remaining() / kEntryHeader) {
    return make_error_at(Errc::kTruncated, c.absolute_pos(),
                         "ATTACH: " + std::to_string(count) + " entries, " +
                             std::to_string(c.remaining()) + " bytes left");
  }
  AttachSection s;
  s.entries.resize(count);
  for (AttachEntry& e : s.entries) {
    BPFPROF_ASSIGN_OR_RETURN(e.prog_id, c.u32("ATTACH prog_id"));
    BPFPROF_ASSIGN_OR_RETURN(e.link_id, c.u32("ATTACH link_id"));
    BPFPROF_ASSIGN_OR_RETURN(e.source, c.u32("ATTACH source"));
    BPFPROF_ASSIGN_OR_RETURN(uint32_t len, c.u32("ATTACH point_len"));
    BPFPROF_ASSIGN_OR_RETURN(e.time_ns, c.u64("ATTACH time_ns"));
    if (len > kMaxPoint) {
      return make_error_at(Errc::kBadRecord, c.absolute_pos() - 12,
                           "ATTACH point_len " + std::to_string(len) + " above 65536");
    }
    BPFPROF_ASSIGN_OR_RETURN(std::string_view point, c.fixed_string(len, "ATTACH point"));
    e.point = point;
  }
  if (c.remaining() > 0) {
    BPFPROF_ASSIGN_OR_RETURN(s.links_lost, c.u64("ATTACH links_lost"));
  }
  if (c.remaining() == 0) return s;  // written before the perf-event fds were queried
  BPFPROF_ASSIGN_OR_RETURN(s.perf_fds_lost, c.u64("ATTACH perf_fds_lost"));
  BPFPROF_ASSIGN_OR_RETURN(s.fd_dirs_unreadable, c.u64("ATTACH fd_dirs_unreadable"));
  BPFPROF_ASSIGN_OR_RETURN(uint32_t holders, c.u32("ATTACH holders"));
  BPFPROF_ASSIGN_OR_RETURN(uint32_t reserved, c.u32("ATTACH holders reserved"));
  (void)reserved;
  if (holders > c.remaining() / kHolderSize) {
    return make_error_at(Errc::kTruncated, c.absolute_pos(),
                         "ATTACH: " + std::to_string(holders) + " holders, " +
                             std::to_string(c.remaining()) + " bytes left");
  }
  for (uint32_t h = 0; h < holders; h++) {
    BPFPROF_ASSIGN_OR_RETURN(uint32_t index, c.u32("ATTACH holder index"));
    BPFPROF_ASSIGN_OR_RETURN(uint32_t pid, c.u32("ATTACH holder pid"));
    BPFPROF_ASSIGN_OR_RETURN(std::string_view comm, c.fixed_string(kCommSize, "ATTACH holder comm"));
    if (index >= s.entries.size()) {
      return make_error_at(Errc::kBadRecord, c.absolute_pos() - kHolderSize,
                           "ATTACH holder of entry " + std::to_string(index) + " of " +
                               std::to_string(s.entries.size()));
    }
    s.entries[index].pid = pid;
    s.entries[index].comm = comm;
  }
  return s;
}

}  // namespace bpfprof::perfdata
