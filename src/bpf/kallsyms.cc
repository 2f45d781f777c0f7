// SPDX-License-Identifier: Apache-2.0
// /proc/kallsyms [bpf] entries and the names the kernel gives JIT'd functions.
#include <bpf/btf.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "bpf/owned_btf.h"
#include "bpf/query.h"

namespace bpfprof::bpf {
namespace {

// BTF name of the FUNC that func_info[i] points at; empty if unavailable.
std::string btf_func_name(const ProgInfo& info, const btf* b, size_t i) {
  uint32_t rec = info.info.func_info_rec_size;
  if (!b || rec < sizeof(bpf_func_info) || (i + 1) * rec > info.func_info.size()) return {};
  bpf_func_info fi;
  std::memcpy(&fi, info.func_info.data() + i * rec, sizeof fi);
  const btf_type* t = btf__type_by_id(b, fi.type_id);
  if (!t) return {};
  const char* name = btf__name_by_offset(b, t->name_off);
  return name ? name : "";
}

using EntryIt = std::vector<KallsymsEntry>::const_iterator;

// The entries at `addr`; none for a hidden (zero) address.
std::pair<EntryIt, EntryIt> entries_at(const std::vector<KallsymsEntry>& kallsyms, uint64_t addr) {
  if (addr == 0) return {kallsyms.end(), kallsyms.end()};
  return std::equal_range(kallsyms.begin(), kallsyms.end(), KallsymsEntry{addr, {}},
                          [](const KallsymsEntry& a, const KallsymsEntry& b) { return a.addr < b.addr; });
}

// The kernel's rule, established on Linux 6.18 (x86-64, JIT on) by
// ksym_names_test.cc, which compares our names with the PERF_RECORD_KSYMBOL
// records of a dummy event and with /proc/kallsyms:
//  - function 0 uses info.tag, the tag of the whole program. prog_tags[0] is
//    the tag of the main function's own instructions and differs for a bpf2bpf
//    program (seen: kernel bpf_prog_4749fad006b00537_query_main, prog_tags[0]
//    c3b2e3dd8815b351) -- the tag perf 6.1 wrongly uses. For one function the
//    two are equal.
//  - function i > 0 uses prog_tags[i].
//  - the suffix is the BTF FUNC name of func_info[i] (full length, where
//    info.name is cut to 15 chars); without BTF it is info.name for function 0
//    (nothing, not even "_", when the program has no name) and "F" for every
//    subprogram (seen: bpf_prog_59f4a931744dcdc6_F for a program named raw_calls).
//  - KSYMBOL and kallsyms agree and hold one entry per function address; the
//    kernel does not register function 0 separately from the program.
std::string computed_ksym_name(const ProgInfo& info, const btf* b, size_t i) {
  Tag tag = (i == 0 || i >= info.prog_tags.size()) ? info.tag() : info.prog_tags[i];
  std::string func = i < info.info.nr_func_info ? btf_func_name(info, b, i) : "";
  if (func.empty()) func = i == 0 ? info.name() : "F";
  return ksym_name(tag, func);
}

}  // namespace

bool ksym_names_covered(const ProgInfo& info, const std::vector<KallsymsEntry>& kallsyms) {
  for (uint64_t addr : info.jited_ksyms) {
    auto [it, end] = entries_at(kallsyms, addr);
    if (it == end) return false;
  }
  return true;
}

void resolve_ksym_names(ProgInfo& info, const std::vector<KallsymsEntry>& kallsyms,
                        const BtfBlob* btf) {
  // On failure names fall back to the no-BTF rule: best effort, never an error.
  const OwnedBtf parsed = btf ? parse_btf(*btf) : nullptr;
  const size_t n = info.jited_ksyms.size();
  info.ksym_names.assign(n, {});
  for (size_t i = 0; i < n; ++i) {
    std::string computed = computed_ksym_name(info, parsed.get(), i);
    auto [it, end] = entries_at(kallsyms, info.jited_ksyms[i]);
    // Kernels that listed two names at one address would leave it ambiguous;
    // then the one matching the rule wins, else the first.
    if (it != end && std::none_of(it, end, [&](const KallsymsEntry& e) { return e.name == computed; })) {
      computed = it->name;
    }
    info.ksym_names[i] = std::move(computed);
  }
}

}  // namespace bpfprof::bpf
