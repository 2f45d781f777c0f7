// SPDX-License-Identifier: Apache-2.0
#include "bpf/prog_info.h"

#include <cstring>

namespace bpfprof::bpf {

Tag ProgInfo::tag() const {
  Tag t;
  std::memcpy(t.data(), info.tag, t.size());
  return t;
}

std::string ProgInfo::name() const {
  return std::string(info.name, strnlen(info.name, sizeof info.name));
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
