// SPDX-License-Identifier: Apache-2.0
// Live queries of the running kernel through libbpf. Only the recorder uses
// these; a report never does (DESIGN rule 1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "bpf/prog_info.h"

namespace bpfprof::bpf {

// Ids of all loaded programs (BPF_PROG_GET_NEXT_ID).
Result<std::vector<uint32_t>> list_prog_ids();
// A reference to program `id`; kNotFound if it is gone.
Result<UniqueFd> prog_fd_by_id(uint32_t id);
// bpf_prog_info with every array bpfprof stores (JITed image and ksyms, func
// lens, func/line info, jited line info, prog tags), fetched in two phases.
// Fills ksym_names from `kallsyms` when given, else by the kernel's naming rule
// (needs `btf` for BTF function names).
Result<ProgInfo> read_prog_info(int prog_fd);
// Raw BTF of object `btf_id`.
Result<BtfBlob> read_btf(uint32_t btf_id);

// One "[bpf]" line of /proc/kallsyms: a BPF program function, trampoline or dispatcher.
struct KallsymsEntry {
  uint64_t addr = 0;
  std::string name;
};
// Every [bpf] entry of /proc/kallsyms, sorted by address. Addresses are 0 when
// kptr_restrict hides them (the caller then falls back to computed names).
Result<std::vector<KallsymsEntry>> read_kallsyms_bpf(const std::string& path = "/proc/kallsyms");

// Fills info.ksym_names: the kallsyms name at each jited_ksyms address where
// present, else ksym_name(tag, BTF func name or info.name) as the kernel does.
void resolve_ksym_names(ProgInfo& info, const std::vector<KallsymsEntry>& kallsyms,
                        const BtfBlob* btf);

}  // namespace bpfprof::bpf
