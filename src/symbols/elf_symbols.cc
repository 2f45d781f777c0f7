// SPDX-License-Identifier: Apache-2.0
#include "symbols/elf_symbols.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/unique_fd.h"

namespace bpfprof::symbols {
namespace {

struct ElfCloser {
  void operator()(Elf* e) const { elf_end(e); }
};
using ElfPtr = std::unique_ptr<Elf, ElfCloser>;

Error elf_error(const std::string& path, const char* what) {
  return make_error(Errc::kBadRecord, path + ": " + what + ": " + elf_errmsg(-1));
}

// NT_GNU_BUILD_ID from any SHT_NOTE section.
std::vector<uint8_t> read_build_id(Elf* elf) {
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) continue;
    size_t off = 0, name_off = 0, desc_off = 0;
    GElf_Nhdr nh;
    while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
      const char* base = static_cast<const char*>(data->d_buf);
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
          std::memcmp(base + name_off, "GNU", 4) == 0) {
        const auto* d = reinterpret_cast<const uint8_t*>(base + desc_off);
        return {d, d + nh.n_descsz};
      }
    }
  }
  return {};
}

bool is_function(const GElf_Sym& s) {
  const int type = GELF_ST_TYPE(s.st_info);
  return (type == STT_FUNC || type == STT_GNU_IFUNC) && s.st_shndx != SHN_UNDEF && s.st_value != 0;
}

}  // namespace

Result<std::unique_ptr<ElfSymbols>> ElfSymbols::load(const std::string& path) {
  if (elf_version(EV_CURRENT) == EV_NONE) return make_error(Errc::kInternal, "libelf version");
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return make_sys_error("open " + path, errno);
  ElfPtr elf(elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr));
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF) return elf_error(path, "not an ELF file");

  auto out = std::make_unique<ElfSymbols>();
  out->build_id_ = read_build_id(elf.get());

  size_t nph = 0;
  if (elf_getphdrnum(elf.get(), &nph) != 0) return elf_error(path, "program headers");
  for (size_t i = 0; i < nph; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf.get(), static_cast<int>(i), &ph) && ph.p_type == PT_LOAD) {
      out->segments_.push_back({ph.p_offset, ph.p_filesz, ph.p_vaddr});
    }
  }

  // .symtab when the file has one (not stripped), else .dynsym.
  Elf_Scn* chosen = nullptr;
  GElf_Shdr chosen_sh{};
  for (Elf_Scn* scn = elf_nextscn(elf.get(), nullptr); scn; scn = elf_nextscn(elf.get(), scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    if (sh.sh_type == SHT_SYMTAB || (sh.sh_type == SHT_DYNSYM && !chosen)) {
      chosen = scn;
      chosen_sh = sh;
    }
  }
  struct Raw {
    uint64_t addr, size;
    size_t name_off, name_len;
    bool global;
  };
  std::vector<Raw> raw;
  if (chosen) {
    Elf_Data* data = elf_getdata(chosen, nullptr);
    const size_t n = data && chosen_sh.sh_entsize ? chosen_sh.sh_size / chosen_sh.sh_entsize : 0;
    for (size_t i = 0; i < n; ++i) {
      GElf_Sym s;
      if (!gelf_getsym(data, static_cast<int>(i), &s) || !is_function(s)) continue;
      const char* name = elf_strptr(elf.get(), chosen_sh.sh_link, s.st_name);
      if (!name || !*name) continue;
      const size_t len = std::strlen(name);
      raw.push_back({s.st_value, s.st_size, out->names_.size(), len, GELF_ST_BIND(s.st_info) != STB_LOCAL});
      out->names_.append(name, len);
      out->names_.push_back('\0');
    }
  }
  // Aliases at one address: sized before unsized, global before local.
  std::stable_sort(raw.begin(), raw.end(), [](const Raw& a, const Raw& b) {
    if (a.addr != b.addr) return a.addr < b.addr;
    if ((a.size != 0) != (b.size != 0)) return a.size != 0;
    return a.global > b.global;
  });
  raw.erase(std::unique(raw.begin(), raw.end(), [](const Raw& a, const Raw& b) { return a.addr == b.addr; }),
            raw.end());
  out->symbols_.reserve(raw.size());
  for (const Raw& r : raw) {
    out->symbols_.push_back({r.addr, r.size, std::string_view(out->names_).substr(r.name_off, r.name_len)});
  }
  return out;
}

std::optional<uint64_t> ElfSymbols::offset_to_vaddr(uint64_t offset) const {
  for (const Segment& s : segments_) {
    if (offset >= s.offset && offset - s.offset < s.filesz) return offset - s.offset + s.vaddr;
  }
  return std::nullopt;
}

const ElfSymbols::Symbol* ElfSymbols::find(uint64_t vaddr) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), vaddr,
                             [](uint64_t a, const Symbol& s) { return a < s.addr; });
  if (it == symbols_.begin()) return nullptr;
  const Symbol& s = *std::prev(it);
  if (s.size != 0) return vaddr - s.addr < s.size ? &s : nullptr;
  // Unsized (hand-written assembly): up to the next symbol, if there is one.
  return it != symbols_.end() ? &s : nullptr;
}

uint32_t ElfCache::slot(std::string_view path) {
  std::string key(path);
  if (auto it = index_.find(key); it != index_.end()) return it->second;
  auto s = std::make_unique<Slot>();
  s->path = symfs_ + key;
  slots_.push_back(std::move(s));
  const auto i = static_cast<uint32_t>(slots_.size() - 1);
  index_.emplace(std::move(key), i);
  return i;
}

const ElfSymbols* ElfCache::get(uint32_t slot) const {
  if (slot >= slots_.size()) return nullptr;
  const Slot& s = *slots_[slot];
  // After the first call this is one acquire load: no lock on the hot path.
  std::call_once(s.once, [&s] {
    auto loaded = ElfSymbols::load(s.path);
    if (loaded.ok()) s.elf = std::move(loaded).value();
  });
  return s.elf.get();
}

}  // namespace bpfprof::symbols
