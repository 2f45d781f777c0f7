// SPDX-License-Identifier: Apache-2.0
#include "annotate/disasm.h"

#include <capstone/capstone.h>

#include <algorithm>
#include <memory>

#include <fmt/format.h>

namespace bpfprof::report {
namespace {

struct HandleCloser {
  void operator()(csh* h) const {
    cs_close(h);
    delete h;
  }
};
struct InsnFree {
  void operator()(cs_insn* i) const { cs_free(i, 1); }
};

// One undecodable unit: a byte on x86-64 (variable length), a word on arm64
// (fixed 4-byte encoding), or whatever is left at the end.
Insn raw_unit(Arch arch, std::span<const uint8_t> code, size_t at) {
  if (arch == Arch::kArm64 && code.size() - at >= 4) {
    uint32_t word = 0;
    for (size_t i = 0; i < 4; ++i) word |= static_cast<uint32_t>(code[at + i]) << (8 * i);
    return Insn{static_cast<uint32_t>(at), 4, fmt::format(".inst 0x{:08x}", word)};
  }
  return Insn{static_cast<uint32_t>(at), 1, fmt::format(".byte 0x{:02x}", code[at])};
}

}  // namespace

std::optional<Arch> arch_from_name(std::string_view machine) {
  if (machine == "x86_64" || machine == "amd64") return Arch::kX86_64;
  if (machine == "aarch64" || machine == "arm64") return Arch::kArm64;
  return std::nullopt;
}

Result<std::vector<Insn>> disassemble(Arch arch, std::span<const uint8_t> code, uint64_t address) {
  const cs_arch cs_a = arch == Arch::kX86_64 ? CS_ARCH_X86 : CS_ARCH_ARM64;
  const cs_mode cs_m = arch == Arch::kX86_64 ? CS_MODE_64 : CS_MODE_LITTLE_ENDIAN;
  std::unique_ptr<csh, HandleCloser> handle(new csh{});
  if (cs_err err = cs_open(cs_a, cs_m, handle.get()); err != CS_ERR_OK) {
    delete handle.release();
    return make_error(Errc::kUnsupported, fmt::format("capstone: {}", cs_strerror(err)));
  }
  std::unique_ptr<cs_insn, InsnFree> insn(cs_malloc(*handle));
  if (!insn) return make_error(Errc::kInternal, "capstone: out of memory");

  std::vector<Insn> out;
  size_t at = 0;
  while (at < code.size()) {
    const uint8_t* p = code.data() + at;
    size_t left = code.size() - at;
    uint64_t pc = address + at;
    // cs_disasm_iter decodes one instruction and advances p/left/pc; on a
    // byte sequence it does not know it stops, and we step over one unit.
    if (cs_disasm_iter(*handle, &p, &left, &pc, insn.get())) {
      std::string text = insn->mnemonic;
      if (insn->op_str[0] != '\0') text += fmt::format(" {}", insn->op_str);
      out.push_back(Insn{static_cast<uint32_t>(at), insn->size, std::move(text)});
      at += insn->size;
    } else {
      Insn raw = raw_unit(arch, code, at);
      at += raw.size;
      out.push_back(std::move(raw));
    }
  }
  return out;
}

}  // namespace bpfprof::report
