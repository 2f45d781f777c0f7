// SPDX-License-Identifier: Apache-2.0
#include "bpf/disasm.h"

#include <capstone/capstone.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#ifndef BPFPROF_CAPSTONE_SONAME
#error \
    "BPFPROF_CAPSTONE_SONAME: the soname of the capstone the headers belong to (src/bpf/CMakeLists.txt)"
#endif

namespace bpfprof::bpf {
namespace {

// capstone is loaded when the first code is disassembled, not linked: its
// ~77k relative relocations and 1.3 MB of relocated tables cost every
// command ~5 ms and ~370 page faults at start, and only annotate uses it.
// The soname is the one the headers were built against (same ABI).
struct Capstone {
  decltype(&::cs_open) open = nullptr;
  decltype(&::cs_close) close = nullptr;
  decltype(&::cs_malloc) malloc = nullptr;
  decltype(&::cs_free) free = nullptr;
  decltype(&::cs_disasm_iter) disasm_iter = nullptr;
  decltype(&::cs_strerror) strerror = nullptr;
  std::string error;  // why it could not be loaded; empty when it was
};

template <typename Fn>
void bind(void* lib, const char* name, Fn& fn, std::string& error) {
  fn = reinterpret_cast<Fn>(::dlsym(lib, name));
  if (fn == nullptr && error.empty())
    error = fmt::format("{} has no {}", BPFPROF_CAPSTONE_SONAME, name);
}

const Capstone& capstone() {
  static const Capstone lib = [] {
    Capstone c;
    // Never closed: the functions stay valid until the process exits.
    void* handle = ::dlopen(BPFPROF_CAPSTONE_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      c.error =
          fmt::format("cannot load {}: {}", BPFPROF_CAPSTONE_SONAME, why ? why : "unknown error");
      return c;
    }
    bind(handle, "cs_open", c.open, c.error);
    bind(handle, "cs_close", c.close, c.error);
    bind(handle, "cs_malloc", c.malloc, c.error);
    bind(handle, "cs_free", c.free, c.error);
    bind(handle, "cs_disasm_iter", c.disasm_iter, c.error);
    bind(handle, "cs_strerror", c.strerror, c.error);
    return c;
  }();
  return lib;
}

struct HandleCloser {
  void operator()(csh* h) const {
    capstone().close(h);
    delete h;
  }
};
struct InsnFree {
  void operator()(cs_insn* i) const { capstone().free(i, 1); }
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
  const Capstone& cs = capstone();
  if (!cs.error.empty())
    return make_error(Errc::kUnsupported, fmt::format("capstone: {}", cs.error));
  const cs_arch cs_a = arch == Arch::kX86_64 ? CS_ARCH_X86 : CS_ARCH_ARM64;
  const cs_mode cs_m = arch == Arch::kX86_64 ? CS_MODE_64 : CS_MODE_LITTLE_ENDIAN;
  std::unique_ptr<csh, HandleCloser> handle(new csh{});
  if (cs_err err = cs.open(cs_a, cs_m, handle.get()); err != CS_ERR_OK) {
    delete handle.release();
    return make_error(Errc::kUnsupported, fmt::format("capstone: {}", cs.strerror(err)));
  }
  std::unique_ptr<cs_insn, InsnFree> insn(cs.malloc(*handle));
  if (!insn) return make_error(Errc::kInternal, "capstone: out of memory");

  std::vector<Insn> out;
  size_t at = 0;
  while (at < code.size()) {
    const uint8_t* p = code.data() + at;
    size_t left = code.size() - at;
    uint64_t pc = address + at;
    // cs_disasm_iter decodes one instruction and advances p/left/pc; on a
    // byte sequence it does not know it stops, and we step over one unit.
    if (cs.disasm_iter(*handle, &p, &left, &pc, insn.get())) {
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

}  // namespace bpfprof::bpf
