// SPDX-License-Identifier: Apache-2.0
#include "bpf/map_loads.h"

#include <array>

#include "base/text_lines.h"

namespace bpfprof::bpf {
namespace {

// The x86-64 register the JIT keeps each BPF register in (R0..R10;
// arch/x86/net/bpf_jit_comp.c, reg2hex and is_ereg).
constexpr std::array<std::string_view, 11> kX86Regs = {"rax", "rdi", "rsi", "rdx", "rcx", "r8",
                                                       "rbx", "r13", "r14", "r15", "rbp"};

// What emit_mov_imm64 needs a movabs for.
bool needs_movabs(uint64_t v) {
  const auto s = static_cast<int64_t>(v);
  return v > UINT32_MAX && (s < INT32_MIN || s > INT32_MAX);
}

bool set_once(std::map<uint32_t, uint64_t>& to, uint32_t id, uint64_t addr) {
  auto [it, fresh] = to.try_emplace(id, addr);
  return fresh || it->second == addr;
}

}  // namespace

std::optional<Movabs> parse_movabs(std::string_view text) {
  if (!text.starts_with("movabs ")) return std::nullopt;
  text.remove_prefix(7);
  const size_t comma = text.find(", ");
  if (comma == std::string_view::npos) return std::nullopt;
  Movabs m{std::string(text.substr(0, comma)), 0};
  std::string_view imm = text.substr(comma + 2);
  const bool negative = imm.starts_with('-');
  if (negative) imm.remove_prefix(1);
  if (!imm.starts_with("0x")) return std::nullopt;
  const std::optional<uint64_t> v = parse_hex(imm.substr(2));
  if (!v) return std::nullopt;
  m.value = negative ? uint64_t{0} - *v : *v;
  return m;
}

std::optional<MapAddresses> pair_map_loads_x86_64(std::span<const bpf_insn> xlated,
                                                  std::span<const Movabs> movabs) {
  MapAddresses out;
  size_t next = 0;  // the first movabs not taken yet
  for (size_t i = 0; i + 1 < xlated.size(); ++i) {
    const bpf_insn& lo = xlated[i];
    if (lo.code != (BPF_LD | BPF_IMM | BPF_DW)) continue;
    const bpf_insn& hi = xlated[++i];  // a 64-bit load is two instructions
    if (lo.dst_reg >= kX86Regs.size()) return std::nullopt;
    const std::string_view reg = kX86Regs[lo.dst_reg];
    // A subprogram's address (bpf_loop's callback) is dumped as its
    // instruction offset; the JIT loads the function's address, which lies in
    // the module area and fits a sign-extended mov: never a movabs.
    if (lo.src_reg == BPF_PSEUDO_FUNC) continue;
    const bool map = lo.src_reg == BPF_PSEUDO_MAP_FD || lo.src_reg == BPF_PSEUDO_MAP_VALUE;
    // Any other source the dump keeps (the verifier clears it for plain
    // values, kernel symbols included) leaves the value unknown.
    if (!map && lo.src_reg != 0) return std::nullopt;
    const uint64_t value =
        uint64_t{static_cast<uint32_t>(hi.imm)} << 32 | static_cast<uint32_t>(lo.imm);
    if (!map && !needs_movabs(value)) continue;
    // A kernel address (a map's, or a value in it) always needs a movabs:
    // the sign-extended 32-bit range holds only kernel text and modules.
    while (next < movabs.size() &&
           (movabs[next].reg != reg || (!map && movabs[next].value != value))) {
      ++next;
    }
    if (next == movabs.size()) return std::nullopt;
    const uint64_t at = movabs[next++].value;
    const auto id = static_cast<uint32_t>(lo.imm);
    if (lo.src_reg == BPF_PSEUDO_MAP_FD && !set_once(out.addr, id, at)) return std::nullopt;
    if (lo.src_reg == BPF_PSEUDO_MAP_VALUE) {
      const uint64_t off = static_cast<uint32_t>(hi.imm);
      if (at < off || !set_once(out.value_addr, id, at - off)) return std::nullopt;
    }
  }
  return out;
}

size_t apply_map_addresses(std::vector<MapInfo>& maps, const MapAddresses& found) {
  size_t n = 0;
  for (MapInfo& m : maps) {
    if (auto it = found.addr.find(m.id); it != found.addr.end()) {
      m.addr = it->second;
      n++;
    }
    if (auto it = found.value_addr.find(m.id); it != found.value_addr.end()) {
      m.value_addr = it->second;
      n++;
    }
  }
  return n;
}

}  // namespace bpfprof::bpf
