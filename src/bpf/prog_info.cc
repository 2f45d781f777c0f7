// SPDX-License-Identifier: Apache-2.0
#include "bpf/prog_info.h"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace bpfprof::bpf {

Tag ProgInfo::tag() const {
  Tag t;
  std::memcpy(t.data(), info.tag, t.size());
  return t;
}

std::string ProgInfo::name() const {
  return std::string(info.name, strnlen(info.name, sizeof info.name));
}

bool add_map(std::vector<MapInfo>& maps, MapInfo m) {
  if (std::any_of(maps.begin(), maps.end(), [&](const MapInfo& x) { return x.id == m.id; })) return false;
  maps.push_back(std::move(m));
  return true;
}

void merge_metadata(Metadata& to, const Metadata& more) {
  for (const MetadataVar& var : more) {
    if (std::none_of(to.begin(), to.end(),
                     [&](const MetadataVar& e) { return e.name == var.name; })) {
      to.push_back(var);
    }
  }
}

std::string map_type_name(uint32_t type) {
  // libbpf's names (libbpf_bpf_map_type_str), which bpftool prints; by
  // number so that a reader built against older headers names newer types.
  // clang-format off
  static constexpr const char* kNames[] = {
      "unspec", "hash", "array", "prog_array",
      "perf_event_array", "percpu_hash", "percpu_array", "stack_trace",
      "cgroup_array", "lru_hash", "lru_percpu_hash", "lpm_trie",
      "array_of_maps", "hash_of_maps", "devmap", "sockmap",
      "cpumap", "xskmap", "sockhash", "cgroup_storage",
      "reuseport_sockarray", "percpu_cgroup_storage", "queue", "stack",
      "sk_storage", "devmap_hash", "struct_ops", "ringbuf",
      "inode_storage", "task_storage", "bloom_filter", "user_ringbuf",
      "cgrp_storage", "arena",
  };
  // clang-format on
  if (type < std::size(kNames)) return kNames[type];
  return "type " + std::to_string(type);
}

std::string tag_hex(const Tag& tag) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(tag.size() * 2);
  for (uint8_t b : tag) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

std::string ksym_name(const Tag& tag, const std::string& func_name) {
  std::string out = "bpf_prog_" + tag_hex(tag);
  if (!func_name.empty()) out += "_" + func_name;
  return out;
}

}  // namespace bpfprof::bpf
