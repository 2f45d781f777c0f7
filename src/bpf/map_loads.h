// SPDX-License-Identifier: Apache-2.0
// The kernel addresses of a program's maps, recovered from the program itself
// for programs that were loaded before a recording began (the in-kernel
// capture reads them from struct bpf_map only for programs it sees loaded).
//
// The kernel's translated dump of a program (bpf_prog_info.xlated_prog_insns)
// shows each 64-bit immediate load (BPF_LD | BPF_IMM | BPF_DW) of a map's
// address as src_reg BPF_PSEUDO_MAP_FD with imm the map's id, or of an array
// map value as BPF_PSEUDO_MAP_VALUE with imm the map's id and the second
// half's imm the offset into the values; a subprogram's address
// (BPF_PSEUDO_FUNC) as its instruction offset; every other such load keeps
// its value (kernel/bpf/syscall.c, bpf_insn_prepare_dump). The x86-64 JIT turns
// the translated instructions into code one by one, in order, and a 64-bit
// load becomes `movabs reg, imm64` exactly when the value fits neither an
// unsigned nor a sign-extended 32-bit immediate (arch/x86/net/bpf_jit_comp.c,
// emit_mov_imm64). So walking the program's 64-bit loads and the image's
// movabs side by side gives each map load the address the JIT put there.
// Pure functions on data: unit-tested without a kernel.
#pragma once

#include <linux/bpf.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/prog_info.h"

namespace bpfprof::bpf {

// One `movabs reg, imm64` of an x86-64 JIT image, in the image's order.
struct Movabs {
  std::string reg;  // as capstone names it: "rdi", "r13"
  uint64_t value = 0;
  bool operator==(const Movabs&) const = default;
};

// `text` as capstone prints a movabs of an immediate ("movabs rdi,
// 0xffff888102f4c000"); nullopt for any other instruction.
std::optional<Movabs> parse_movabs(std::string_view text);

// The addresses a program's map loads gave: per map id, its struct bpf_map
// (PSEUDO_MAP_FD) and its first value (PSEUDO_MAP_VALUE, the load's address
// less its offset); a map appears in either or both.
struct MapAddresses {
  std::map<uint32_t, uint64_t> addr, value_addr;
  bool operator==(const MapAddresses&) const = default;
};

// Pairs the 64-bit loads of `xlated` with the movabs of the x86-64 JIT image
// made from it. A load of a constant that needs a movabs must meet one of the
// same register and value; a map load takes the next movabs of its register.
// A movabs that no load meets is the JIT's own (a prologue's) and is skipped.
// A subprogram's address never needs one (it lies in the module area). nullopt
// when the two do not agree: a load finds no movabs, a register the JIT does
// not use, one map with two addresses; or a load of a source it cannot value.
std::optional<MapAddresses> pair_map_loads_x86_64(std::span<const bpf_insn> xlated,
                                                  std::span<const Movabs> movabs);

// Sets addr / value_addr of the maps in `maps` that `found` names (others keep
// theirs); how many fields it set.
size_t apply_map_addresses(std::vector<MapInfo>& maps, const MapAddresses& found);

}  // namespace bpfprof::bpf
