// SPDX-License-Identifier: Apache-2.0
#include "perfdata/maps_feature.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace bpfprof::perfdata {
namespace {

constexpr uint32_t kVersion = 1;
constexpr uint32_t kMapEntry = 64;
constexpr uint32_t kMaxUsedMaps = 64;  // the kernel's MAX_USED_MAPS
constexpr size_t kName = 16;

}  // namespace

ProgramMaps program_maps(const std::vector<bpf::ProgInfo>& progs) {
  ProgramMaps out;
  for (const bpf::ProgInfo& p : progs) {
    if (p.maps) out.emplace(p.id(), *p.maps);
  }
  return out;
}

std::vector<std::byte> encode_maps(const ProgramMaps& maps) {
  std::vector<std::byte> out;
  append_pod(out, kVersion);
  append_pod(out, kMapEntry);
  append_pod(out, static_cast<uint32_t>(maps.size()));
  append_pod(out, uint32_t{0});
  for (const auto& [prog, list] : maps) {
    const size_t n = std::min<size_t>(list.size(), kMaxUsedMaps);
    append_pod(out, prog);
    append_pod(out, static_cast<uint32_t>(n));
    for (size_t i = 0; i < n; ++i) {
      const bpf::MapInfo& m = list[i];
      for (uint32_t v : {m.id, m.type, m.key_size, m.value_size, m.max_entries, m.flags}) {
        append_pod(out, v);
      }
      char name[kName] = {};
      std::memcpy(name, m.name.data(), std::min(m.name.size(), kName));
      append_pod(out, name);
      append_pod(out, m.addr);
      append_pod(out, m.value_addr);
      append_pod(out, uint64_t{0});
    }
  }
  return out;
}

Status decode_maps(Bytes section, uint64_t base, ProgramMaps& out) {
  ByteCursor c(section, base);
  BPFPROF_ASSIGN_OR_RETURN(uint32_t version, c.u32("MAPS version"));
  if (version != kVersion) {
    return make_error_at(Errc::kUnsupported, base, "MAPS version " + std::to_string(version));
  }
  const uint64_t entry_size_at = c.absolute_pos();
  BPFPROF_ASSIGN_OR_RETURN(uint32_t entry_size, c.u32("MAPS map_entry_size"));
  if (entry_size < kMapEntry) {
    return make_error_at(Errc::kBadRecord, entry_size_at,
                         "MAPS map_entry_size " + std::to_string(entry_size) + " is below 64");
  }
  BPFPROF_ASSIGN_OR_RETURN(uint32_t programs, c.u32("MAPS programs"));
  BPFPROF_ASSIGN_OR_RETURN(uint32_t reserved, c.u32("MAPS reserved"));
  (void)reserved;
  for (uint32_t p = 0; p < programs; ++p) {
    const uint64_t at = c.absolute_pos();
    BPFPROF_ASSIGN_OR_RETURN(uint32_t prog, c.u32("MAPS prog_id"));
    BPFPROF_ASSIGN_OR_RETURN(uint32_t n, c.u32("MAPS nr_maps"));
    if (n > kMaxUsedMaps) {
      return make_error_at(Errc::kBadRecord, at,
                           "MAPS entry of program " + std::to_string(prog) + " lists " +
                               std::to_string(n) + " maps; a program uses at most 64");
    }
    if (n > c.remaining() / entry_size) {
      return make_error_at(Errc::kTruncated, at,
                           "MAPS entry of program " + std::to_string(prog) + ": " +
                               std::to_string(n) + " maps of " + std::to_string(entry_size) +
                               " bytes, " + std::to_string(c.remaining()) + " left");
    }
    std::vector<bpf::MapInfo> list;
    for (uint32_t i = 0; i < n; ++i) {
      BPFPROF_ASSIGN_OR_RETURN(Bytes e, c.bytes(entry_size, "MAPS map entry"));
      bpf::MapInfo m;
      m.id = load_unaligned<uint32_t>(e.data());
      m.type = load_unaligned<uint32_t>(e.data() + 4);
      m.key_size = load_unaligned<uint32_t>(e.data() + 8);
      m.value_size = load_unaligned<uint32_t>(e.data() + 12);
      m.max_entries = load_unaligned<uint32_t>(e.data() + 16);
      m.flags = load_unaligned<uint32_t>(e.data() + 20);
      const char* name = reinterpret_cast<const char*>(e.data() + 24);
      m.name.assign(name, strnlen(name, kName));
      m.addr = load_unaligned<uint64_t>(e.data() + 40);
      m.value_addr = load_unaligned<uint64_t>(e.data() + 48);
      list.push_back(std::move(m));
    }
    auto [at_prog, fresh] = out.try_emplace(prog, std::move(list));  // moves only when fresh
    if (!fresh) {
      for (bpf::MapInfo& m : list) bpf::add_map(at_prog->second, std::move(m));
    }
  }
  return ok_status();
}

void attach_maps(const ProgramMaps& maps, std::vector<bpf::ProgInfo>& progs) {
  for (bpf::ProgInfo& p : progs) {
    if (auto it = maps.find(p.id()); it != maps.end()) p.maps = it->second;
  }
}

}  // namespace bpfprof::perfdata
