// SPDX-License-Identifier: Apache-2.0
#include "host/vdso.h"

#include <cstring>

#include "base/text_file.h"
#include "host/proc_maps.h"

namespace bpfprof::host {
namespace {

// Far more than any vDSO (8 KiB on x86-64 6.x kernels, with its data pages
// mapped separately as [vvar]): a bound against a maps line gone wrong.
constexpr uint64_t kMaxVdsoBytes = 1 << 20;

}  // namespace

Result<std::vector<std::byte>> read_vdso_image() {
  BPFPROF_ASSIGN_OR_RETURN(std::string maps, read_text_file("/proc/self/maps", 1 << 16));
  for (const ExecMapping& m : exec_mappings(maps)) {
    if (m.filename != "[vdso]") continue;
    const uint64_t size = m.entry.end - m.entry.start;
    if (m.entry.end <= m.entry.start || size > kMaxVdsoBytes) {
      return make_error(Errc::kBadRecord, "[vdso] mapping of " + std::to_string(size) + " bytes");
    }
    // Mapped readable in this process; its first bytes are the ELF header.
    const auto* at = reinterpret_cast<const std::byte*>(m.entry.start);
    std::vector<std::byte> image(at, at + size);
    if (std::memcmp(image.data(), "\x7f" "ELF", 4) != 0) {
      return make_error(Errc::kBadRecord, "[vdso] mapping is not an ELF image");
    }
    return image;
  }
  return make_error(Errc::kNotFound, "no [vdso] mapping in this process");
}

}  // namespace bpfprof::host
