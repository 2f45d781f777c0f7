// SPDX-License-Identifier: Apache-2.0
// Live queries of the running kernel through libbpf. Only the recorder uses
// these; a report never does (DESIGN rule 1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "bpf/prog_info.h"

namespace bpfprof::bpf {

// One "[bpf]" line of /proc/kallsyms: a BPF program function, trampoline or dispatcher.
struct KallsymsEntry {
  uint64_t addr = 0;
  std::string name;
};

// Buffers the kernel fills in read_prog_info / read_btf, kept by a caller that
// reads many programs (the enricher) so each read neither allocates nor
// zero-fills them again: the results are copied out at their exact sizes.
// Grows to the largest program seen; one per thread.
struct ReadBuffers {
  std::vector<std::byte> arrays[8];  // one per bpf_prog_info array read (the 7 stored, map ids)
  std::vector<std::byte> btf;
};

// Ids of all loaded programs (BPF_PROG_GET_NEXT_ID).
Result<std::vector<uint32_t>> list_prog_ids();
// A reference to program `id`; kNotFound if it is gone.
Result<UniqueFd> prog_fd_by_id(uint32_t id);
// An fd of the object pinned at `path` in a BPF filesystem (BPF_OBJ_GET).
Result<UniqueFd> pinned_object(const std::string& path);
// bpf_prog_info with every array bpfprof stores (JITed image and ksyms, func
// lens, func/line info, jited line info, prog tags), fetched in two phases,
// and its maps (their ids in the same call, then each map's bpf_map_info;
// left unknown when one cannot be read).
// Only the kernel's data: ksym_names stay empty (the enricher needs none, since
// names come from KSYMBOL records; resolve_ksym_names fills them).
Result<ProgInfo> read_prog_info(int prog_fd);
// The same with the first call's array capacities taken from `capacity`'s
// counts and record sizes (a second call follows where they were too small).
Result<ProgInfo> read_prog_info(int prog_fd, const bpf_prog_info& capacity);
// The same as read_prog_info(fd) / (fd, capacity), the kernel writing into `buffers`.
Result<ProgInfo> read_prog_info(int prog_fd, ReadBuffers& buffers);
Result<ProgInfo> read_prog_info(int prog_fd, const bpf_prog_info& capacity, ReadBuffers& buffers);
// The maps the program on `prog_fd` uses, in the kernel's order
// (bpf_prog_info.map_ids, then bpf_map_info of each): no kernel address
// (MapInfo::addr 0), which only the in-kernel capture reads.
Result<std::vector<MapInfo>> read_prog_maps(int prog_fd);
// The program's translated instructions (bpf_prog_info.xlated_prog_insns) as
// the kernel dumps them: map loads show the map's id (bpf/map_loads.h).
Result<std::vector<bpf_insn>> read_xlated_insns(int prog_fd);
// The capacities read_prog_info(fd) starts with.
bpf_prog_info default_capacity();
// As above, plus ksym_names: taken from `kallsyms` where it has them and
// computed with `btf` otherwise (when `btf` is null and a name must be
// computed, the program's BTF is fetched by info.btf_id).
Result<ProgInfo> read_prog_info(int prog_fd, const std::vector<KallsymsEntry>& kallsyms,
                                const BtfBlob* btf);
// Raw BTF of object `btf_id`, exactly as the kernel returns it (not parsed).
Result<BtfBlob> read_btf(uint32_t btf_id);
// The same, the kernel writing into `buffers` (the blob gets the exact size).
Result<BtfBlob> read_btf(uint32_t btf_id, ReadBuffers& buffers);

// A program's run statistics (bpf_prog_info.run_cnt / run_time_ns). The
// kernel counts only while BPF_STATS_RUN_TIME is enabled (enable_run_stats).
struct RunStats {
  uint64_t run_cnt = 0;
  uint64_t run_time_ns = 0;
};
// Turns the kernel's run statistics on; they stay on while the fd is open.
// They cost about 20 ns per program run, system-wide.
Result<UniqueFd> enable_run_stats();

// Turns a bpf() refusal (enumerating programs, reading their info, turning
// statistics on) into one line naming what is missing.
Error explain_bpf_error(Error error);
// The scalar part of bpf_prog_info only (no arrays: one cheap call).
Result<RunStats> read_run_stats(int prog_fd);

// Fills info.ksym_names: the kallsyms name at each jited_ksyms address where
// present, else the kernel's rule (kallsyms.cc): ksym_name(info.tag for
// function 0 / prog_tags[i] after, BTF func name of func_info[i], or without
// BTF info.name for function 0 and "F" for subprograms).
void resolve_ksym_names(ProgInfo& info, const std::vector<KallsymsEntry>& kallsyms,
                        const BtfBlob* btf);
// True when `kallsyms` names every function of `info` (no BTF needed to resolve).
bool ksym_names_covered(const ProgInfo& info, const std::vector<KallsymsEntry>& kallsyms);

}  // namespace bpfprof::bpf
