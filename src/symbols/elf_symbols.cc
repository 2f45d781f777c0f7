// SPDX-License-Identifier: Apache-2.0
#include "symbols/elf_symbols.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>

#include "base/unique_fd.h"
#include "symbols/interval_timeline.h"

namespace bpfprof::symbols {
namespace {

// The demangled-name slot of a name that does not demangle.
const std::string kNotMangled;

struct ElfCloser {
  void operator()(Elf* e) const { elf_end(e); }
};
using ElfPtr = std::unique_ptr<Elf, ElfCloser>;

struct OpenElf {
  UniqueFd fd;
  ElfPtr elf;
};

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


// <root>/usr/lib/debug/.build-id/ab/cdef....debug, if present and an ELF file.
std::optional<OpenElf> open_debug_file(const std::string& root, const std::vector<uint8_t>& id) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (uint8_t b : id) {
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 15]);
  }
  const std::string path = root + "/usr/lib/debug/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
  OpenElf o{UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)), nullptr};
  if (!o.fd.valid()) return std::nullopt;
  o.elf.reset(elf_begin(o.fd.get(), ELF_C_READ_MMAP, nullptr));
  if (!o.elf || elf_kind(o.elf.get()) != ELF_K_ELF) return std::nullopt;
  return o;
}

}  // namespace

// Kept mapped while the symbols are used: their names are read from it in
// place. Its file descriptor is closed once loaded (a system-wide profile
// touches hundreds of files).
struct ElfSymbols::Image {
  ElfPtr elf;
};

// Aliases at one address: sized before unsized, global before local, then
// file order. A large C++ binary has ~100k symbols and this sort was most of
// a small report's time: a least-significant-digit radix sort, stable, on
// 11-bit digits of (address, alias class): the class and the address's low 9
// bits first, then each 11 bits of the address that are not the same in
// every symbol (three passes for a binary below 1 GiB).
void ElfSymbols::sort_by_address(std::vector<Raw>& raw) {
  constexpr unsigned kBits = 11, kBuckets = 1u << kBits, kClassBits = 2;
  static_assert(sizeof(Raw::alias_class) * 8 >= kClassBits);
  const size_t n = raw.size();
  auto other = std::make_unique_for_overwrite<Raw[]>(n);
  Raw* from = raw.data();
  Raw* to = other.get();
  auto pass = [&](auto digit) {
    size_t start[kBuckets + 1] = {};
    for (size_t i = 0; i < n; i++) start[digit(from[i]) + 1]++;
    for (unsigned b = 1; b <= kBuckets; b++) start[b] += start[b - 1];
    for (size_t i = 0; i < n; i++) to[start[digit(from[i])]++] = from[i];
    std::swap(from, to);
  };
  constexpr unsigned kLowBits = kBits - kClassBits;
  pass([](const Raw& r) {
    return static_cast<unsigned>(((r.addr & ((1u << kLowBits) - 1)) << kClassBits) | (r.alias_class & 3u));
  });
  uint64_t all_or = 0, all_and = ~uint64_t{0};
  for (size_t i = 0; i < n; i++) {
    all_or |= raw[i].addr;
    all_and &= raw[i].addr;
  }
  for (unsigned shift = kLowBits; shift < 64; shift += kBits) {
    if ((((all_or ^ all_and) >> shift) & (kBuckets - 1)) == 0) continue;  // one value: already in order
    pass([shift](const Raw& r) { return static_cast<unsigned>((r.addr >> shift) & (kBuckets - 1)); });
  }
  if (from != raw.data()) std::copy(from, from + n, raw.data());
}

Result<std::unique_ptr<ElfSymbols>> ElfSymbols::load(const std::string& path, const std::string& debug_root) {
  if (elf_version(EV_CURRENT) == EV_NONE) return make_error(Errc::kInternal, "libelf version");
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return make_sys_error("open " + path, errno);
  ElfPtr elf(elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr));
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF) return elf_error(path, "not an ELF file");

  auto out = std::make_unique<ElfSymbols>();
  std::vector<Raw> raw;
  out->build_id_ = read_build_id(elf.get());

  size_t nph = 0;
  if (elf_getphdrnum(elf.get(), &nph) != 0) return elf_error(path, "program headers");
  for (size_t i = 0; i < nph; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf.get(), static_cast<int>(i), &ph) && ph.p_type == PT_LOAD) {
      out->segments_.push_back({ph.p_offset, ph.p_filesz, ph.p_vaddr});
    }
  }

  const char* names = nullptr;
  bool have_symtab = read_symbols(elf.get(), raw, names);
  OpenElf image{std::move(fd), std::move(elf)};
  // A stripped file: its separate debug file (same addresses) has .symtab.
  if (!have_symtab && !out->build_id_.empty()) {
    if (auto debug = open_debug_file(debug_root, out->build_id_)) {
      std::vector<Raw> from_debug;
      const char* debug_names = nullptr;
      if (read_symbols(debug->elf.get(), from_debug, debug_names)) {
        raw = std::move(from_debug);
        names = debug_names;
        image = std::move(*debug);
      }
    }
  }
  // Everything needed from the file is in libelf's memory (its mapping, or
  // what it read) by now: the descriptor can go.
  elf_cntl(image.elf.get(), ELF_C_FDDONE);
  out->image_ = std::make_unique<Image>(Image{std::move(image.elf)});
  out->names_ = names;
  sort_by_address(raw);
  raw.erase(std::unique(raw.begin(), raw.end(), [](const Raw& a, const Raw& b) { return a.addr == b.addr; }),
            raw.end());
  out->symbols_ = std::move(raw);
  out->demangled_ = std::make_unique<std::atomic<const std::string*>[]>(out->symbols_.size());
  out->serial_ = next_timeline_serial();
  return out;
}

ElfSymbols::~ElfSymbols() {
  for (size_t i = 0; demangled_ && i < symbols_.size(); i++) {
    const std::string* d = demangled_[i].load(std::memory_order_relaxed);
    if (d != &kNotMangled) delete d;
  }
}

std::string_view ElfSymbols::shown_name(size_t i) const {
  const std::string_view name(names_ + symbols_[i].name_off);
  if (!name.starts_with("_Z")) return name;
  std::atomic<const std::string*>& slot = demangled_[i];
  const std::string* d = slot.load(std::memory_order_acquire);
  if (d == nullptr) {
    // Demangled by whichever thread gets here first; a thread that loses the
    // race drops its copy and takes the winner's, so the view is one.
    int status = -1;
    std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name.data(), nullptr, nullptr, &status),
                                               std::free);
    auto made = status == 0 && out ? std::make_unique<const std::string>(out.get()) : nullptr;
    const std::string* mine = made ? made.get() : &kNotMangled;
    if (slot.compare_exchange_strong(d, mine, std::memory_order_acq_rel, std::memory_order_acquire)) {
      made.release();
      d = mine;
    }
  }
  return d == &kNotMangled ? name : std::string_view(*d);
}

bool ElfSymbols::read_symbols(Elf* elf, std::vector<Raw>& raw, const char*& names) {
  // .symtab when the file has one (not stripped), else .dynsym.
  Elf_Scn* chosen = nullptr;
  GElf_Shdr chosen_sh{};
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    if (sh.sh_type == SHT_SYMTAB || (sh.sh_type == SHT_DYNSYM && !chosen)) {
      chosen = scn;
      chosen_sh = sh;
    }
  }
  if (!chosen) return false;
  Elf_Data* data = elf_getdata(chosen, nullptr);
  Elf_Scn* strscn = elf_getscn(elf, chosen_sh.sh_link);
  Elf_Data* strtab = strscn ? elf_getdata(strscn, nullptr) : nullptr;
  if (!data || !chosen_sh.sh_entsize || !strtab || !strtab->d_buf) return chosen_sh.sh_type == SHT_SYMTAB;
  const char* strings = static_cast<const char*>(strtab->d_buf);
  const size_t strings_size = strtab->d_size;
  // A name must end inside the table (demangling reads up to its NUL): names
  // starting after the table's last NUL do not, and are left out.
  const void* last_nul = ::memrchr(strings, '\0', strings_size);
  if (last_nul == nullptr) return chosen_sh.sh_type == SHT_SYMTAB;
  const size_t ends_before = static_cast<size_t>(static_cast<const char*>(last_nul) - strings);
  names = strings;
  auto add = [&](const GElf_Sym& sym) {
    if (!is_function(sym) || sym.st_name == 0 || sym.st_name >= ends_before || strings[sym.st_name] == '\0') return;
    const uint32_t alias_class = (sym.st_size == 0 ? 2u : 0u) | (GELF_ST_BIND(sym.st_info) == STB_LOCAL ? 1u : 0u);
    raw.push_back({sym.st_value, sym.st_size, sym.st_name, alias_class});
  };
  raw.reserve(raw.size() + data->d_size / chosen_sh.sh_entsize);
  if (gelf_getclass(elf) == ELFCLASS64 && data->d_type == ELF_T_SYM) {
    // elf_getdata gave the table in this host's layout: read it in place.
    const auto* syms = static_cast<const Elf64_Sym*>(data->d_buf);
    const size_t n = data->d_size / sizeof(Elf64_Sym);
    for (size_t i = 0; i < n; ++i) add(syms[i]);
  } else {
    const size_t n = chosen_sh.sh_size / chosen_sh.sh_entsize;
    for (size_t i = 0; i < n; ++i) {
      GElf_Sym sym;
      if (gelf_getsym(data, static_cast<int>(i), &sym)) add(sym);
    }
  }
  return chosen_sh.sh_type == SHT_SYMTAB;
}

std::optional<uint64_t> ElfSymbols::offset_to_vaddr(uint64_t offset) const {
  for (const Segment& s : segments_) {
    if (offset >= s.offset && offset - s.offset < s.filesz) return offset - s.offset + s.vaddr;
  }
  return std::nullopt;
}

std::optional<ElfSymbols::Symbol> ElfSymbols::find(uint64_t vaddr) const {
  // Samples repeat the same instructions: each thread keeps the last answer
  // per address (direct-mapped), for this file (its serial).
  struct Memo {
    uint64_t serial = 0, vaddr = 0;
    size_t index = 0;  // symbols_.size(): no symbol there
  };
  constexpr size_t kMemo = 1024;
  // On the heap, made by the first lookup of each thread (not static TLS,
  // which every process and thread start would zero).
  thread_local std::unique_ptr<Memo[]> memo;
  if (!memo) memo = std::make_unique<Memo[]>(kMemo);
  static_assert(kMemo == 1024);  // the top 10 bits of the hash pick the slot
  Memo& m = memo[((vaddr ^ (vaddr >> 10) ^ serial_) * 0x9e3779b97f4a7c15ULL) >> 54];
  size_t i = symbols_.size();
  if (m.serial == serial_ && m.vaddr == vaddr) {
    i = m.index;
  } else {
    auto it = std::upper_bound(symbols_.begin(), symbols_.end(), vaddr,
                               [](uint64_t a, const Raw& s) { return a < s.addr; });
    if (it != symbols_.begin()) {
      const size_t at = static_cast<size_t>(it - symbols_.begin()) - 1;
      const Raw& s = symbols_[at];
      // Unsized (hand-written assembly): up to the next symbol, if there is one.
      if (s.size != 0 ? vaddr - s.addr < s.size : it != symbols_.end()) i = at;
    }
    m = {serial_, vaddr, i};
  }
  if (i == symbols_.size()) return std::nullopt;
  const Raw& s = symbols_[i];
  return Symbol{s.addr, s.size, shown_name(i)};
}

uint32_t ElfCache::slot(std::string_view path) {
  std::string key(path);
  if (auto it = index_.find(key); it != index_.end()) return it->second;
  auto s = std::make_unique<Slot>();
  s->path = symfs_ + key;
  s->debug_root = symfs_;
  slots_.push_back(std::move(s));
  const auto i = static_cast<uint32_t>(slots_.size() - 1);
  index_.emplace(std::move(key), i);
  return i;
}

const ElfSymbols* ElfCache::get(uint32_t slot) const {
  if (slot >= slots_.size()) return nullptr;
  const Slot& s = *slots_[slot];
  // After the first load this is one acquire load: std::call_once itself
  // costs a few dozen instructions per call even when done.
  if (s.loaded.load(std::memory_order_acquire)) return s.elf.get();
  std::call_once(s.once, [&s] {
    auto loaded = ElfSymbols::load(s.path, s.debug_root);
    if (loaded.ok()) s.elf = std::move(loaded).value();
    s.loaded.store(true, std::memory_order_release);
  });
  return s.elf.get();
}

}  // namespace bpfprof::symbols
