// SPDX-License-Identifier: Apache-2.0
// Disassembly of JIT'd BPF code with capstone. The only file that includes
// capstone: annotate/ and the synthesis of programs loaded before a
// recording (host/, which pairs their map loads with maps) see plain
// instructions. annotate takes the architecture from the recording (its ARCH
// feature), never from the host, so a file recorded on arm64 annotates
// correctly on x86-64.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace bpfprof::bpf {

enum class Arch : uint8_t { kX86_64, kArm64 };

// `uname -m` spellings as the ARCH feature stores them ("x86_64", "aarch64",
// also "arm64"); nullopt for architectures we cannot disassemble.
std::optional<Arch> arch_from_name(std::string_view machine);

struct Insn {
  uint32_t offset = 0;  // from the start of the code given to disassemble()
  uint32_t size = 0;
  std::string text;  // "mnemonic operands"
};

// Every byte of `code` ends up in exactly one instruction: bytes capstone
// cannot decode become ".byte 0x.." (x86-64, one byte) or ".inst 0x........"
// (arm64, one word) and decoding resumes after them, so the sizes always sum
// to code.size(). `address` only affects how branch targets are printed.
// Errors: capstone itself cannot be opened for the architecture.
Result<std::vector<Insn>> disassemble(Arch arch, std::span<const uint8_t> code, uint64_t address);

}  // namespace bpfprof::bpf
