// SPDX-License-Identifier: Apache-2.0
// Plain data about one BPF program as the kernel reported it (bpf_prog_info and
// its variable arrays) and BTF blobs. No libbpf here: perf.data readers and
// writers use these types without touching the live kernel.
#pragma once

#include <linux/bpf.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bpfprof::bpf {

using Tag = std::array<uint8_t, 8>;

// One map a program uses, as struct bpf_map (captured at load) or
// bpf_map_info (queried) has it.
struct MapInfo {
  uint32_t id = 0;
  uint32_t type = 0;  // enum bpf_map_type
  uint32_t key_size = 0, value_size = 0, max_entries = 0;
  uint32_t flags = 0;  // map_flags
  std::string name;
  // The kernel address of its struct bpf_map (what the JIT loads for a map
  // reference) and, for an array map, of its first value (what it loads for
  // direct value access); 0 where not known (a map queried by id).
  uint64_t addr = 0, value_addr = 0;
  bool operator==(const MapInfo&) const = default;
};

// Appends `m` to `maps` unless a map of its id is there already; whether it did.
bool add_map(std::vector<MapInfo>& maps, MapInfo m);

// The name bpftool prints for a map type ("hash", "percpu_array", ...);
// "type N" for a number it does not know.
std::string map_type_name(uint32_t type);

// How a metadata value is written where types show (JSON), as `bpftool -j
// prog show` writes it: a string, a number (the text is an integer's
// decimal digits) or a boolean (the text is "true" or "false"); or a value
// as another tool printed it (perf's BPF_METADATA records), of no known type:
// a string in JSON, its text as it is (unquoted) in text.
enum class MetadataKind : uint8_t { kText, kNumber, kBool, kPrinted };

// One bpf_metadata_* variable: its name without the prefix and its value as
// text (a string's characters, an integer's decimal digits).
struct MetadataVar {
  std::string name, value;
  MetadataKind kind = MetadataKind::kText;
  bool operator==(const MetadataVar&) const = default;
};

// A program's bpf_metadata_* variables, in their section's order.
using Metadata = std::vector<MetadataVar>;

// Appends the entries of `more` whose names `to` does not have yet.
void merge_metadata(Metadata& to, const Metadata& more);

struct ProgInfo {
  // Scalar fields as the kernel filled them; every pointer field is 0 here and
  // the counts/rec sizes describe the vectors below.
  bpf_prog_info info{};
  std::vector<uint8_t> jited_insns;        // JIT image, all functions back to back
  std::vector<uint64_t> jited_ksyms;       // start address per function
  std::vector<uint32_t> jited_func_lens;   // length per function
  std::vector<std::byte> func_info;        // nr_func_info * func_info_rec_size
  std::vector<std::byte> line_info;        // nr_line_info * line_info_rec_size
  std::vector<uint64_t> jited_line_info;   // one JIT address per line_info entry
  std::vector<Tag> prog_tags;              // tag per function
  // Name per function exactly as the kernel registers it (KSYMBOL, kallsyms).
  std::vector<std::string> ksym_names;
  // The maps it uses (aux->used_maps, bpf_prog_info.map_ids), in the
  // kernel's order; none when the recording does not say.
  std::optional<std::vector<MapInfo>> maps;
  // Its bpf_metadata_* variables, read from its .rodata map while it was
  // loaded (bpf/metadata.h); empty when it has none or they were not read.
  Metadata metadata;

  uint32_t id() const { return info.id; }
  Tag tag() const;
  std::string name() const;  // info.name
};

struct BtfBlob {
  uint32_t id = 0;
  std::vector<std::byte> data;  // raw BTF as the kernel returns it
};

// "bpf_prog_" + 16 hex digits of `tag` + "_" + func_name (omitted if empty): the
// kernel's ksym naming rule.
std::string ksym_name(const Tag& tag, const std::string& func_name);
std::string tag_hex(const Tag& tag);

}  // namespace bpfprof::bpf
