// SPDX-License-Identifier: Apache-2.0
#include "bpf/metadata.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.h"
#include "bpf/owned_btf.h"

namespace bpfprof::bpf {
namespace {

constexpr std::string_view kPrefix = "bpf_metadata_";

std::string_view name_of(const btf* b, uint32_t offset) {
  const char* s = btf__name_by_offset(b, offset);
  return s == nullptr ? std::string_view{} : std::string_view(s);
}

std::string hex_bytes(const std::byte* p, size_t n) {
  std::string out = "0x";
  for (size_t i = 0; i < n; ++i) out += fmt::format("{:02x}", static_cast<unsigned>(p[i]));
  return out;
}

// An integer of `size` bytes at `p`, as the kernel stores it (host order).
std::string int_text(const std::byte* p, uint32_t size, bool is_signed) {
  switch (size) {
    case 1: {
      uint8_t v;
      std::memcpy(&v, p, 1);
      return is_signed ? std::to_string(static_cast<int8_t>(v)) : std::to_string(v);
    }
    case 2: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return is_signed ? std::to_string(static_cast<int16_t>(v)) : std::to_string(v);
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return is_signed ? std::to_string(static_cast<int32_t>(v)) : std::to_string(v);
    }
    case 8: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return is_signed ? std::to_string(static_cast<int64_t>(v)) : std::to_string(v);
    }
    default:
      return hex_bytes(p, size);
  }
}

struct Value {
  std::string text;
  MetadataKind kind = MetadataKind::kText;
};

// One variable's value: `type_id` of `b`, `n` bytes at `p`. Its kind is
// bpftool's JSON type for it: numbers for integers and enums without a name
// for the value, booleans for _Bool, strings for the rest.
Value value_of(const btf* b, uint32_t type_id, const std::byte* p, size_t n) {
  const int resolved = btf__resolve_type(b, type_id);
  const btf_type* t = resolved < 0 ? nullptr : btf__type_by_id(b, static_cast<uint32_t>(resolved));
  if (t == nullptr) return {hex_bytes(p, n)};
  if (btf_is_int(t) && t->size <= n && btf_int_offset(t) == 0 && btf_int_bits(t) == t->size * 8) {
    const uint8_t enc = btf_int_encoding(t);
    if (enc & BTF_INT_BOOL) return {*p != std::byte{0} ? "true" : "false", MetadataKind::kBool};
    std::string text = int_text(p, t->size, (enc & BTF_INT_SIGNED) != 0);
    // A size int_text has no integer for is shown in hex: a string.
    const MetadataKind kind = text.starts_with("0x") ? MetadataKind::kText : MetadataKind::kNumber;
    return {std::move(text), kind};
  }
  if (btf_is_enum(t) && t->size <= n &&
      (t->size == 1 || t->size == 2 || t->size == 4 || t->size == 8)) {
    uint32_t v = 0;
    if (t->size == 4) {
      std::memcpy(&v, p, 4);
      const struct btf_enum* e = btf_enum(t);
      for (uint16_t i = 0; i < btf_vlen(t); ++i) {
        if (static_cast<uint32_t>(e[i].val) == v) return {std::string(name_of(b, e[i].name_off))};
      }
    }
    return {int_text(p, t->size, btf_kflag(t)), MetadataKind::kNumber};
  }
  if (btf_is_array(t)) {
    const struct btf_array* a = btf_array(t);
    const int elem = btf__resolve_type(b, a->type);
    const btf_type* et = elem < 0 ? nullptr : btf__type_by_id(b, static_cast<uint32_t>(elem));
    if (et != nullptr && btf_is_int(et) && et->size == 1 && a->nelems <= n) {
      // A string: printable characters up to a NUL inside the array.
      const char* s = reinterpret_cast<const char*>(p);
      const size_t len = strnlen(s, a->nelems);
      bool printable = len < a->nelems;
      for (size_t i = 0; i < len && printable; ++i) {
        printable = static_cast<unsigned char>(s[i]) >= 0x20 && s[i] != 0x7f;
      }
      if (printable) return {std::string(s, len)};
    }
  }
  return {hex_bytes(p, n)};
}

}  // namespace

bool may_hold_metadata(const MapInfo& m) {
  return m.type == BPF_MAP_TYPE_ARRAY && m.max_entries == 1 && m.key_size == 4 && m.value_size > 0;
}

std::optional<Metadata> metadata_from_value(const btf* b, uint32_t btf_value_type_id,
                                            std::span<const std::byte> value, size_t* cut) {
  const btf_type* sec = btf__type_by_id(b, btf_value_type_id);
  if (sec == nullptr || !btf_is_datasec(sec) || name_of(b, sec->name_off) != ".rodata") {
    return std::nullopt;
  }
  Metadata out;
  const btf_var_secinfo* vars = btf_var_secinfos(sec);
  for (uint16_t i = 0; i < btf_vlen(sec); ++i) {
    const btf_type* var = btf__type_by_id(b, vars[i].type);
    if (var == nullptr || !btf_is_var(var)) continue;
    const std::string_view name = name_of(b, var->name_off);
    if (!name.starts_with(kPrefix)) continue;
    if (vars[i].offset > value.size() || vars[i].size > value.size() - vars[i].offset) {
      if (cut != nullptr) ++*cut;
      continue;
    }
    Value v = value_of(b, var->type, value.data() + vars[i].offset, vars[i].size);
    out.push_back(MetadataVar{std::string(name.substr(kPrefix.size())), std::move(v.text), v.kind});
  }
  return out;
}

Result<std::optional<Metadata>> read_rodata_metadata(uint32_t map_id) {
  const std::string who = "map " + std::to_string(map_id);
  UniqueFd fd(bpf_map_get_fd_by_id(map_id));
  if (!fd.valid()) {
    if (errno == ENOENT) return make_error(Errc::kNotFound, who + " is gone");
    return make_sys_error("bpf_map_get_fd_by_id of " + who, errno);
  }
  bpf_map_info info{};
  __u32 len = sizeof info;
  // bpf_obj_get_info_by_fd: libbpf 1.1 (Debian 12) has no bpf_map_get_info_by_fd.
  if (bpf_obj_get_info_by_fd(fd.get(), &info, &len) != 0) {
    return make_sys_error("bpf_obj_get_info_by_fd of " + who, errno);
  }
  if (info.type != BPF_MAP_TYPE_ARRAY || info.key_size != 4 || info.max_entries != 1 ||
      info.btf_id == 0 || info.btf_value_type_id == 0) {
    return std::optional<Metadata>();
  }
  OwnedBtf b(btf__load_from_kernel_by_id(info.btf_id));
  if (!b) {
    return make_sys_error(
        "btf__load_from_kernel_by_id " + std::to_string(info.btf_id) + " of " + who, errno);
  }
  const btf_type* sec = btf__type_by_id(b.get(), info.btf_value_type_id);
  if (sec == nullptr || !btf_is_datasec(sec) || name_of(b.get(), sec->name_off) != ".rodata") {
    return std::optional<Metadata>();
  }
  std::vector<std::byte> value(info.value_size);
  const uint32_t key = 0;
  if (bpf_map_lookup_elem(fd.get(), &key, value.data()) != 0) {
    if (errno == ENOENT) return make_error(Errc::kNotFound, who + " has no value");
    return make_sys_error("bpf_map_lookup_elem of " + who, errno);
  }
  return metadata_from_value(b.get(), info.btf_value_type_id, value);
}

}  // namespace bpfprof::bpf
