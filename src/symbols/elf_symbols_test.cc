// SPDX-License-Identifier: Apache-2.0
// ElfSymbols on ELF files written here with libelf: symbols found by
// address with the right alias chosen, names read where they lie, and
// hostile string tables refused without reading past them.
#include "symbols/elf_symbols.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/subprocess.h"

namespace bpfprof::symbols {
namespace {

struct Sym {
  std::string name;
  uint64_t addr = 0, size = 0;
  bool local = false;
  uint8_t type = STT_FUNC;
};

struct CodeSection {
  uint64_t addr = 0, size = 0;
};

// A 64-bit ELF file with .symtab/.strtab/.shstrtab holding `syms` in this
// order; `strtab_tail` is appended to the string table after the names (no
// NUL unless it has one), and a symbol named "@tail" is named by it; `code`,
// if sized, adds an allocated executable section (.fini) there.
class ElfFile {
 public:
  explicit ElfFile(const std::vector<Sym>& syms, const std::string& strtab_tail = "", CodeSection code = {}) {
    path_ = dir_.file("test.elf");
    const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || elf_version(EV_CURRENT) == EV_NONE) return;
    Elf* elf = elf_begin(fd, ELF_C_WRITE, nullptr);
    Elf64_Ehdr* eh = elf64_newehdr(elf);
    eh->e_ident[EI_DATA] = ELFDATA2LSB;
    eh->e_type = ET_DYN;
    eh->e_machine = EM_X86_64;
    eh->e_version = EV_CURRENT;

    strtab_.push_back('\0');
    std::vector<size_t> named_by_tail;
    for (const Sym& s : syms) {
      Elf64_Sym e{};
      if (s.name == "@tail") {
        named_by_tail.push_back(symtab_.size());
      } else {
        e.st_name = static_cast<Elf64_Word>(strtab_.size());
        strtab_ += s.name;
        strtab_.push_back('\0');
      }
      e.st_info = ELF64_ST_INFO(s.local ? STB_LOCAL : STB_GLOBAL, s.type);
      e.st_shndx = 1;  // any defined section
      e.st_value = s.addr;
      e.st_size = s.size;
      symtab_.push_back(e);
    }
    for (size_t i : named_by_tail) symtab_[i].st_name = static_cast<Elf64_Word>(strtab_.size());
    strtab_ += strtab_tail;
    shstrtab_ = std::string("\0.symtab\0.strtab\0.shstrtab\0.fini\0", 33);

    Elf_Scn* sym_scn = add_section(elf, 1, SHT_SYMTAB, symtab_.data(), symtab_.size() * sizeof(Elf64_Sym),
                                   ELF_T_SYM, sizeof(Elf64_Sym));
    Elf_Scn* str_scn = add_section(elf, 9, SHT_STRTAB, strtab_.data(), strtab_.size(), ELF_T_BYTE, 0);
    Elf_Scn* shstr_scn = add_section(elf, 17, SHT_STRTAB, shstrtab_.data(), shstrtab_.size(), ELF_T_BYTE, 0);
    if (code.size != 0) {
      code_.assign(code.size, '\xc3');
      Elf64_Shdr* sh = elf64_getshdr(add_section(elf, 27, SHT_PROGBITS, code_.data(), code_.size(), ELF_T_BYTE, 0));
      sh->sh_flags = SHF_ALLOC | SHF_EXECINSTR;
      sh->sh_addr = code.addr;
      sh->sh_size = code.size;
    }
    Elf64_Shdr* sym_sh = elf64_getshdr(sym_scn);
    sym_sh->sh_link = static_cast<Elf64_Word>(elf_ndxscn(str_scn));
    eh->e_shstrndx = static_cast<Elf64_Half>(elf_ndxscn(shstr_scn));
    ok_ = elf_update(elf, ELF_C_WRITE) > 0;
    elf_end(elf);
    ::close(fd);
  }
  bool ok() const { return ok_; }
  const std::string& path() const { return path_; }

 private:
  static Elf_Scn* add_section(Elf* elf, Elf64_Word name, Elf64_Word type, void* buf, size_t size, Elf_Type t,
                              Elf64_Xword entsize) {
    Elf_Scn* scn = elf_newscn(elf);
    Elf_Data* d = elf_newdata(scn);
    d->d_buf = buf;
    d->d_size = size;
    d->d_type = t;
    d->d_align = 8;
    d->d_version = EV_CURRENT;
    Elf64_Shdr* sh = elf64_getshdr(scn);
    sh->sh_name = name;
    sh->sh_type = type;
    sh->sh_entsize = entsize;
    return scn;
  }

  bpfprof::testing::TempDir dir_;  // removed with the file
  std::string path_;
  std::vector<Elf64_Sym> symtab_;
  std::string strtab_, shstrtab_, code_;
  bool ok_ = false;
};

std::string found_name(const ElfSymbols& e, uint64_t addr) {
  auto s = e.find(addr);
  return s ? std::string(s->name) : "<none>";
}

// perf's choice: sized, then global, then fewer leading underscores, then the
// longer name, then file order.
TEST(ElfSymbolsTest, AliasesPreferSizedGlobalFewerUnderscoresLongerName) {
  ElfFile f({
      {"unsized_local_with_a_long_name", 0x1000, 0, true},
      {"sized_local_with_a_long_name", 0x1000, 0x10, true},
      {"unsized_global_with_a_long_name", 0x1000, 0, false},
      {"__sized_global_underscored_long", 0x1000, 0x10, false},
      {"sized_global_a", 0x1000, 0x10, false},
      {"sized_global_bb", 0x1000, 0x10, false},
      {"sized_global_cc", 0x1000, 0x10, false},
      {"next", 0x2000, 0x20, false},
      {"data_object", 0x3000, 0x20, false, STT_OBJECT},
  });
  ASSERT_TRUE(f.ok());
  auto loaded = ElfSymbols::load(f.path());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const ElfSymbols& e = *loaded.value();
  EXPECT_EQ(e.size(), 2u);  // one per address; the object is not a function
  EXPECT_EQ(found_name(e, 0x1000), "sized_global_bb");
  EXPECT_EQ(found_name(e, 0x100f), "sized_global_bb");
  EXPECT_EQ(found_name(e, 0x1010), "<none>");  // past its size, before the next
  EXPECT_EQ(found_name(e, 0x2000), "next");
  EXPECT_EQ(found_name(e, 0x3000), "<none>");
  EXPECT_EQ(found_name(e, 0xfff), "<none>");
}

// Addresses over the whole 64-bit range (every digit of the sort differs),
// several aliases at some: each address finds the alias perf's rule picks
// (class, then the longer name, then file order).
TEST(ElfSymbolsTest, ManyAddressesAcrossTheRangeFindTheirFirstAlias) {
  std::mt19937_64 rng(42);
  std::vector<Sym> syms;
  std::vector<uint64_t> addrs;
  for (int i = 0; i < 3000; i++) {
    uint64_t a = rng() | 1;
    if (i % 3 == 0) a &= 0xffffffffULL;  // some in the low range, as real binaries
    addrs.push_back(a);
  }
  std::map<uint64_t, std::pair<int, std::string>> expected;  // addr -> (class, name)
  for (int i = 0; i < 6000; i++) {
    const uint64_t a = addrs[rng() % addrs.size()];
    Sym s{"f" + std::to_string(i), a, (rng() % 2) ? 8u : 0u, (rng() % 2) != 0};
    const int cls = (s.size == 0 ? 2 : 0) | (s.local ? 1 : 0);
    auto [it, fresh] = expected.try_emplace(a, cls, s.name);
    if (!fresh && (cls < it->second.first ||
                   (cls == it->second.first && s.name.size() > it->second.second.size()))) {
      it->second = {cls, s.name};
    }
    syms.push_back(std::move(s));
  }
  ElfFile f(syms);
  ASSERT_TRUE(f.ok());
  auto loaded = ElfSymbols::load(f.path());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const ElfSymbols& e = *loaded.value();
  ASSERT_EQ(e.size(), expected.size());
  for (const auto& [addr, want] : expected) {
    // An unsized symbol runs to the next one; the last one, in no code
    // section here, has none.
    const bool runs_to_nothing = addr == expected.rbegin()->first && want.first >= 2;
    EXPECT_EQ(found_name(e, addr), runs_to_nothing ? "<none>" : want.second) << std::hex << addr;
  }
}

// The last unsized symbol runs to the end of its code section (_fini, at the
// end of .fini: perf names a sample there _fini too).
TEST(ElfSymbolsTest, LastUnsizedSymbolRunsToTheEndOfItsSection) {
  ElfFile f({{"sized", 0x1000, 0x10, false}, {"_init", 0x2000, 0, true}, {"_fini", 0x3010, 0, true}}, "",
            CodeSection{0x3010, 9});
  ASSERT_TRUE(f.ok());
  auto loaded = ElfSymbols::load(f.path());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const ElfSymbols& e = *loaded.value();
  EXPECT_EQ(found_name(e, 0x1010), "<none>") << "past a sized symbol's end";
  EXPECT_EQ(found_name(e, 0x300f), "_init");
  EXPECT_EQ(found_name(e, 0x3010), "_fini");
  EXPECT_EQ(found_name(e, 0x3018), "_fini");
  EXPECT_EQ(found_name(e, 0x3019), "<none>") << "past .fini";
}

// An unsized symbol stops at its code section's end even when another
// symbol follows (lld puts .plt, its 32-byte header unnamed, after .fini).
TEST(ElfSymbolsTest, UnsizedSymbolStopsAtItsSectionEndBeforeTheNextSymbol) {
  ElfFile f({{"_fini", 0x3010, 0, true}, {"after", 0x3040, 0x10, false}}, "",
            CodeSection{0x3010, 9});
  ASSERT_TRUE(f.ok());
  auto loaded = ElfSymbols::load(f.path());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const ElfSymbols& e = *loaded.value();
  EXPECT_EQ(found_name(e, 0x3018), "_fini");
  EXPECT_EQ(found_name(e, 0x3019), "<none>") << "past .fini";
  EXPECT_EQ(found_name(e, 0x302a), "<none>") << "in the gap before the next symbol";
  EXPECT_EQ(found_name(e, 0x3040), "after");
  const auto fini = e.find(0x3010);
  ASSERT_TRUE(fini);
  EXPECT_EQ(fini->size, 9u) << "an unsized symbol's extent is its size";
}

// A string table whose last name runs off its end: that name is left out,
// the others are found, nothing is read past the table.
TEST(ElfSymbolsTest, NameRunningOffTheStringTableIsLeftOut) {
  ElfFile f({{"kept", 0x1000, 0x10, false}, {"@tail", 0x2000, 0x10, false}}, "unterminated");
  ASSERT_TRUE(f.ok());
  auto loaded = ElfSymbols::load(f.path());
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded.value()->size(), 1u);
  EXPECT_EQ(found_name(*loaded.value(), 0x1000), "kept");
  EXPECT_EQ(found_name(*loaded.value(), 0x2000), "<none>");
}

// The same symbol named by a terminated tail is kept.
TEST(ElfSymbolsTest, NameEndingAtTheTablesLastByteIsKept) {
  ElfFile f({{"kept", 0x1000, 0x10, false}, {"@tail", 0x2000, 0x10, false}}, std::string("last\0", 5));
  ASSERT_TRUE(f.ok());
  auto loaded = ElfSymbols::load(f.path());
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded.value()->size(), 2u);
  EXPECT_EQ(found_name(*loaded.value(), 0x2000), "last");
}

}  // namespace
}  // namespace bpfprof::symbols
