// SPDX-License-Identifier: Apache-2.0
// PLT stubs named as their targets with "@plt" (`malloc@plt`), as perf
// synthesizes them: the symbol tables have no entries for them.
#include <gelf.h>
#include <libelf.h>

#include <cstring>
#include <string>
#include <string_view>

#include "symbols/demangle.h"
#include "symbols/elf_symbols.h"

namespace bpfprof::symbols {

void ElfSymbols::add_plt_symbols(Elf* elf, std::vector<Raw>& raw) {
  // The PLT's first entry (its header) resolves lazily; entry k + 1 jumps
  // through the GOT slot of .rela.plt's entry k.
  GElf_Ehdr eh;
  if (!gelf_getehdr(elf, &eh)) return;
  uint64_t header = 0, entry = 0;
  if (eh.e_machine == EM_X86_64) {
    header = 16, entry = 16;
  } else if (eh.e_machine == EM_AARCH64) {
    header = 32, entry = 16;
  } else {
    return;
  }
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return;
  Elf_Scn* rel = nullptr;
  GElf_Shdr rel_sh{}, plt_sh{};
  bool have_plt = false;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (name == nullptr) continue;
    if ((sh.sh_type == SHT_RELA && std::strcmp(name, ".rela.plt") == 0) ||
        (sh.sh_type == SHT_REL && std::strcmp(name, ".rel.plt") == 0)) {
      rel = scn;
      rel_sh = sh;
    } else if (sh.sh_type == SHT_PROGBITS && std::strcmp(name, ".plt") == 0) {
      plt_sh = sh;
      have_plt = true;
    }
  }
  if (!rel || !have_plt || rel_sh.sh_entsize == 0) return;
  Elf_Scn* dynsym = elf_getscn(elf, rel_sh.sh_link);
  GElf_Shdr dynsym_sh;
  if (!dynsym || !gelf_getshdr(dynsym, &dynsym_sh)) return;
  Elf_Data* rels = elf_getdata(rel, nullptr);
  Elf_Data* syms = elf_getdata(dynsym, nullptr);
  Elf_Scn* strscn = elf_getscn(elf, dynsym_sh.sh_link);
  Elf_Data* strs = strscn ? elf_getdata(strscn, nullptr) : nullptr;
  if (!rels || !syms || !strs || !strs->d_buf) return;
  const char* strings = static_cast<const char*>(strs->d_buf);
  const void* last_nul = ::memrchr(strings, '\0', strs->d_size);
  const size_t ends_before = last_nul ? static_cast<size_t>(static_cast<const char*>(last_nul) - strings) : 0;
  const size_t n = rels->d_size / rel_sh.sh_entsize;
  uint64_t at = plt_sh.sh_addr + header;
  for (size_t i = 0; i < n && at + entry <= plt_sh.sh_addr + plt_sh.sh_size; i++, at += entry) {
    uint64_t info = 0;
    if (rel_sh.sh_type == SHT_RELA) {
      GElf_Rela r;
      if (!gelf_getrela(rels, static_cast<int>(i), &r)) break;
      info = r.r_info;
    } else {
      GElf_Rel r;
      if (!gelf_getrel(rels, static_cast<int>(i), &r)) break;
      info = r.r_info;
    }
    // An entry without a symbol (IRELATIVE: an ifunc resolved at load) is
    // named "@plt", as perf names it.
    std::string_view name;
    GElf_Sym sym;
    if (const uint64_t k = GELF_R_SYM(info); k != 0 && gelf_getsym(syms, static_cast<int>(k), &sym) &&
                                             sym.st_name < ends_before) {
      name = strings + sym.st_name;
    }
    std::string shown(name);
    if (name.starts_with("_Z")) shown = demangle(name, full_signatures_).value_or(shown);
    const auto off = static_cast<uint32_t>(plt_names_.size());
    plt_names_ += shown;
    plt_names_ += "@plt";
    plt_names_.push_back('\0');
    raw.push_back({at, entry, off, kPltName});
  }
}

}  // namespace bpfprof::symbols
