// SPDX-License-Identifier: Apache-2.0
#include "perfdata/metadata_feature.h"

#include <algorithm>
#include <string>
#include <string_view>

namespace bpfprof::perfdata {
namespace {

// 1: no kind (every value a string); 2 adds it.
constexpr uint32_t kVersion = 2;

void append_text(std::vector<std::byte>& out, std::string_view s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  out.insert(out.end(), p, p + s.size());
}

}  // namespace

ProgramMetadata program_metadata(const std::vector<bpf::ProgInfo>& progs) {
  ProgramMetadata out;
  for (const bpf::ProgInfo& p : progs) {
    if (!p.metadata.empty()) bpf::merge_metadata(out[p.id()], p.metadata);
  }
  return out;
}

std::vector<std::byte> encode_metadata(const ProgramMetadata& metadata) {
  std::vector<std::byte> out;
  append_pod(out, kVersion);
  append_pod(out, static_cast<uint32_t>(metadata.size()));
  for (const auto& [prog, entries] : metadata) {
    append_pod(out, prog);
    append_pod(out, static_cast<uint32_t>(entries.size()));
    for (const bpf::MetadataVar& var : entries) {
      const std::string_view n = std::string_view(var.name).substr(0, kMaxMetadataText);
      const std::string_view v = std::string_view(var.value).substr(0, kMaxMetadataText);
      // A number cut short is no longer that number.
      const bool cut = v.size() < var.value.size();
      append_pod(out, static_cast<uint32_t>(n.size()));
      append_pod(out, static_cast<uint32_t>(v.size()));
      append_pod(out, static_cast<uint32_t>(cut ? bpf::MetadataKind::kText : var.kind));
      append_text(out, n);
      append_text(out, v);
      out.resize((out.size() + 3) / 4 * 4);
    }
  }
  return out;
}

Status decode_metadata(Bytes section, uint64_t base, ProgramMetadata& out) {
  ByteCursor c(section, base);
  BPFPROF_ASSIGN_OR_RETURN(uint32_t version, c.u32("METADATA version"));
  if (version != 1 && version != kVersion) {
    return make_error_at(Errc::kUnsupported, base, "METADATA version " + std::to_string(version));
  }
  BPFPROF_ASSIGN_OR_RETURN(uint32_t programs, c.u32("METADATA programs"));
  for (uint32_t p = 0; p < programs; ++p) {
    const uint64_t at = c.absolute_pos();
    BPFPROF_ASSIGN_OR_RETURN(uint32_t prog, c.u32("METADATA prog_id"));
    BPFPROF_ASSIGN_OR_RETURN(uint32_t n, c.u32("METADATA nr_entries"));
    if (n > c.remaining() / 8) {
      return make_error_at(Errc::kTruncated, at,
                           "METADATA entry of program " + std::to_string(prog) + ": " +
                               std::to_string(n) + " variables in " +
                               std::to_string(c.remaining()) + " bytes");
    }
    bpf::Metadata list;
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t entry_at = c.absolute_pos();
      BPFPROF_ASSIGN_OR_RETURN(uint32_t name_len, c.u32("METADATA name_len"));
      BPFPROF_ASSIGN_OR_RETURN(uint32_t value_len, c.u32("METADATA value_len"));
      uint32_t kind = 0;
      if (version >= 2) {
        BPFPROF_ASSIGN_OR_RETURN(kind, c.u32("METADATA kind"));
      }
      if (name_len > kMaxMetadataText || value_len > kMaxMetadataText) {
        return make_error_at(Errc::kBadRecord, entry_at,
                             "METADATA variable of program " + std::to_string(prog) + ": name of " +
                                 std::to_string(name_len) + " and value of " +
                                 std::to_string(value_len) + " bytes; at most " +
                                 std::to_string(kMaxMetadataText) + " each");
      }
      const size_t padded = (size_t{name_len} + value_len + 3) / 4 * 4;
      BPFPROF_ASSIGN_OR_RETURN(Bytes text, c.bytes(padded, "METADATA variable"));
      const char* s = reinterpret_cast<const char*>(text.data());
      // A kind this version does not know: the value as a string.
      const auto k = kind <= static_cast<uint32_t>(bpf::MetadataKind::kPrinted)
                         ? static_cast<bpf::MetadataKind>(kind)
                         : bpf::MetadataKind::kText;
      list.push_back(
          bpf::MetadataVar{std::string(s, name_len), std::string(s + name_len, value_len), k});
    }
    bpf::merge_metadata(out[prog], list);
  }
  return ok_status();
}

void attach_metadata(const ProgramMetadata& metadata, std::vector<bpf::ProgInfo>& progs) {
  for (bpf::ProgInfo& p : progs) {
    if (auto it = metadata.find(p.id()); it != metadata.end()) {
      bpf::merge_metadata(p.metadata, it->second);
    }
  }
}

}  // namespace bpfprof::perfdata
