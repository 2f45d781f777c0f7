// SPDX-License-Identifier: Apache-2.0
#include "perfdata/build_ids.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string_view>

namespace bpfprof::perfdata {
namespace {

constexpr uint16_t kMiscCpumodeMask = 7;
constexpr uint16_t kMiscKernel = 1;
constexpr uint16_t kMiscBuildIdSize = 1 << 15;
constexpr size_t kEntryHeader = 36;  // header, pid, build_id[20], size, reserved
constexpr uint32_t kNtGnuBuildId = 3;

size_t align4(size_t n) { return (n + 3) & ~size_t{3}; }

}  // namespace

std::vector<uint8_t> recorded_kernel_build_id(Bytes section) {
  size_t pos = 0;
  while (section.size() - pos >= kEntryHeader) {
    const std::byte* e = section.data() + pos;
    const auto misc = load_unaligned<uint16_t>(e + 4);
    const auto size = load_unaligned<uint16_t>(e + 6);
    if (size < kEntryHeader || size > section.size() - pos) break;
    const auto pid = load_unaligned<int32_t>(e + 8);
    const char* name = reinterpret_cast<const char*>(e + kEntryHeader);
    const std::string_view filename(name, strnlen(name, size - kEntryHeader));
    if (pid == -1 && (misc & kMiscCpumodeMask) == kMiscKernel && filename == "[kernel.kallsyms]") {
      size_t n = 20;
      if (misc & kMiscBuildIdSize) n = std::min<size_t>(20, static_cast<uint8_t>(e[32]));
      const auto* id = reinterpret_cast<const uint8_t*>(e + 12);
      return {id, id + n};
    }
    pos += size;
  }
  return {};
}

std::vector<uint8_t> note_build_id(Bytes notes) {
  size_t pos = 0;
  while (notes.size() - pos >= 12) {
    const auto namesz = load_unaligned<uint32_t>(notes.data() + pos);
    const auto descsz = load_unaligned<uint32_t>(notes.data() + pos + 4);
    const auto type = load_unaligned<uint32_t>(notes.data() + pos + 8);
    const size_t name_at = pos + 12;
    if (namesz > notes.size() - name_at) break;
    const size_t desc_at = name_at + align4(namesz);
    if (desc_at > notes.size() || descsz > notes.size() - desc_at) break;
    if (type == kNtGnuBuildId && namesz == 4 &&
        std::memcmp(notes.data() + name_at, "GNU", 4) == 0) {
      const auto* d = reinterpret_cast<const uint8_t*>(notes.data() + desc_at);
      return {d, d + descsz};
    }
    pos = desc_at + align4(descsz);
  }
  return {};
}

std::vector<uint8_t> running_kernel_build_id(const std::string& notes_path) {
  std::ifstream in(notes_path, std::ios::binary);
  if (!in) return {};
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return note_build_id(Bytes(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()));
}

}  // namespace bpfprof::perfdata
