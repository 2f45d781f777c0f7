// SPDX-License-Identifier: Apache-2.0
#include "symbols/elf_symbols.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/prefault.h"
#include "base/unique_fd.h"
#include "symbols/demangle.h"
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

// Per section index, whether it is loaded code by perf's measure: allocated,
// and named like a text section (".text", ".init.text", ...). Labels (symbols
// without a type: ld.so's `_start`, `_dl_start_user`) count only there.
std::vector<bool> text_sections(Elf* elf) {
  size_t n = 0, shstrndx = 0;
  if (elf_getshdrnum(elf, &n) != 0 || elf_getshdrstrndx(elf, &shstrndx) != 0) return {};
  std::vector<bool> text(n, false);
  for (size_t i = 1; i < n; i++) {
    Elf_Scn* scn = elf_getscn(elf, i);
    GElf_Shdr sh;
    if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC)) continue;
    const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
    text[i] = name != nullptr && std::strstr(name, "text") != nullptr;
  }
  return text;
}

// The allocated code sections' [start, end), sorted by start.
std::vector<std::pair<uint64_t, uint64_t>> code_sections(Elf* elf) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_ALLOC) && (sh.sh_flags & SHF_EXECINSTR) &&
        sh.sh_size != 0) {
      out.emplace_back(sh.sh_addr, sh.sh_addr + sh.sh_size);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The end of the code section holding `addr` (of `sections`, sorted), if
// one does.
std::optional<uint64_t> code_section_end(const std::vector<std::pair<uint64_t, uint64_t>>& sections,
                                         uint64_t addr) {
  auto it = std::upper_bound(
      sections.begin(), sections.end(), addr,
      [](uint64_t a, const std::pair<uint64_t, uint64_t>& s) { return a < s.first; });
  if (it == sections.begin() || addr >= std::prev(it)->second) return std::nullopt;
  return std::prev(it)->second;
}

bool is_label(const GElf_Sym& s, const std::vector<bool>& text) {
  const int vis = GELF_ST_VISIBILITY(s.st_other);
  return GELF_ST_TYPE(s.st_info) == STT_NOTYPE && s.st_shndx != SHN_UNDEF && s.st_shndx < text.size() &&
         text[s.st_shndx] && s.st_value != 0 && vis != STV_HIDDEN && vis != STV_INTERNAL;
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
  std::vector<std::byte> copy;  // an image read from memory (declared first: outlives elf)
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
  prefault(other.get(), n * sizeof(Raw));
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

Result<std::unique_ptr<ElfSymbols>> ElfSymbols::load(const std::string& path, const std::string& debug_root,
                                                     bool full_signatures) {
  if (elf_version(EV_CURRENT) == EV_NONE) return make_error(Errc::kInternal, "libelf version");
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return make_sys_error("open " + path, errno);
  ElfPtr elf(elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr));
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF) return elf_error(path, "not an ELF file");
  auto image = std::make_unique<Image>();
  image->elf = std::move(elf);
  return load_elf(std::move(fd), std::move(image), path, debug_root, full_signatures);
}

Result<std::unique_ptr<ElfSymbols>> ElfSymbols::load_image(std::span<const std::byte> bytes,
                                                           std::string_view what, bool full_signatures) {
  if (elf_version(EV_CURRENT) == EV_NONE) return make_error(Errc::kInternal, "libelf version");
  // libelf takes a writable image; it reads this one only (native byte
  // order), but a copy keeps the caller's bytes (a mapped file) untouched.
  auto image = std::make_unique<Image>();
  image->copy.assign(bytes.begin(), bytes.end());
  const std::string name(what);
  if (image->copy.empty()) return make_error(Errc::kBadRecord, name + ": empty image");
  image->elf.reset(elf_memory(reinterpret_cast<char*>(image->copy.data()), image->copy.size()));
  if (!image->elf || elf_kind(image->elf.get()) != ELF_K_ELF) return elf_error(name, "not an ELF image");
  return load_elf(UniqueFd(), std::move(image), name, "", full_signatures);
}

Result<std::unique_ptr<ElfSymbols>> ElfSymbols::load_elf(UniqueFd fd, std::unique_ptr<Image> image,
                                                         const std::string& path,
                                                         const std::string& debug_root, bool full_signatures) {
  Elf* const elf = image->elf.get();
  auto out = std::make_unique<ElfSymbols>();
  out->full_signatures_ = full_signatures;
  std::vector<Raw> raw;
  out->build_id_ = read_build_id(elf);

  size_t nph = 0;
  if (elf_getphdrnum(elf, &nph) != 0) return elf_error(path, "program headers");
  for (size_t i = 0; i < nph; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD) {
      out->segments_.push_back({ph.p_offset, ph.p_filesz, ph.p_vaddr});
    }
  }

  const char* names = nullptr;
  bool have_symtab = read_symbols(elf, raw, names);
  // A stripped file: its separate debug file (same addresses) has .symtab.
  std::optional<OpenElf> debug;
  if (!have_symtab && !out->build_id_.empty() && fd.valid()) {
    if ((debug = open_debug_file(debug_root, out->build_id_))) {
      std::vector<Raw> from_debug;
      const char* debug_names = nullptr;
      if (read_symbols(debug->elf.get(), from_debug, debug_names)) {
        raw = std::move(from_debug);
        names = debug_names;
      } else {
        debug.reset();
      }
    }
  }
  // PLT entries are read from the file itself (a debug file has no PLT
  // contents).
  out->add_plt_symbols(elf, raw);
  // An unsized symbol (hand-written assembly; _fini, at the end of .fini)
  // runs to the next symbol but not past the end of its code section, if it
  // is in one: the PLT header lld puts after .fini is not _fini's. Read the sections now,
  // while the file is mapped.
  const std::vector<std::pair<uint64_t, uint64_t>> sections = code_sections(elf);
  if (debug) {
    // The file's own mapping can go: its PLT names are copied.
    image->elf = std::move(debug->elf);
    fd = std::move(debug->fd);
  }
  // Everything needed from the file is in libelf's memory (its mapping, or
  // what it read) by now: the descriptor can go.
  if (fd.valid()) elf_cntl(image->elf.get(), ELF_C_FDDONE);
  out->image_ = std::move(image);
  out->names_ = names;
  sort_by_address(raw);
  out->keep_preferred_aliases(raw);
  for (size_t i = 0; i < raw.size(); i++) {
    if (raw[i].size != 0) continue;
    const std::optional<uint64_t> section_end = code_section_end(sections, raw[i].addr);
    uint64_t end = i + 1 < raw.size() ? raw[i + 1].addr : section_end.value_or(raw[i].addr);
    if (section_end) end = std::min(end, *section_end);
    raw[i].size = end - raw[i].addr;
  }
  out->symbols_ = std::move(raw);
  out->demangled_ = std::make_unique<std::atomic<const std::string*>[]>(out->symbols_.size());
  out->serial_ = next_timeline_serial();
  return out;
}

std::string_view ElfSymbols::raw_name(const Raw& r) const {
  if (r.alias_class & kPltName) return std::string_view(plt_names_.data() + r.name_off);
  return std::string_view(names_ + r.name_off);
}

void ElfSymbols::keep_preferred_aliases(std::vector<Raw>& raw) const {
  auto underscores = [](std::string_view n) {
    size_t k = 0;
    while (k < n.size() && n[k] == '_') k++;
    return k;
  };
  // Names are compared as perf compares them, demangled (C++ constructors
  // and destructors have several mangled aliases of one demangled name).
  std::string a_text, b_text;
  auto compared = [&](const Raw& r, std::string& text) -> std::string_view {
    const std::string_view n = raw_name(r);
    if (!n.starts_with("_Z")) return n;
    std::optional<std::string> d = demangle(n, false);
    if (!d) return n;
    text = std::move(*d);
    return text;
  };
  // Whether a is preferred over b (a comes first in the sorted run).
  auto better = [&](const Raw& a, const Raw& b) {
    const bool a_sized = !(a.alias_class & kUnsized), b_sized = !(b.alias_class & kUnsized);
    if (a_sized != b_sized) return a_sized;
    const bool a_weak = a.alias_class & kWeak, b_weak = b.alias_class & kWeak;
    if (a_weak != b_weak) return !a_weak;
    const bool a_global = !(a.alias_class & kNotGlobal), b_global = !(b.alias_class & kNotGlobal);
    if (a_global != b_global) return a_global;
    const std::string_view an = compared(a, a_text), bn = compared(b, b_text);
    if (underscores(an) != underscores(bn)) return underscores(an) < underscores(bn);
    if (an.size() != bn.size()) return an.size() > bn.size();
    return true;  // the first in the run (file order among equals)
  };
  size_t out = 0;
  for (size_t i = 0; i < raw.size();) {
    size_t best = i, j = i + 1;
    for (; j < raw.size() && raw[j].addr == raw[i].addr; j++) {
      if (!better(raw[best], raw[j])) best = j;
    }
    raw[out++] = raw[best];
    i = j;
  }
  raw.resize(out);
}

ElfSymbols::~ElfSymbols() {
  for (size_t i = 0; demangled_ && i < symbols_.size(); i++) {
    const std::string* d = demangled_[i].load(std::memory_order_relaxed);
    if (d != &kNotMangled) delete d;
  }
}

std::string_view ElfSymbols::shown_name(size_t i) const {
  const Raw& r = symbols_[i];
  if (r.alias_class & kPltName) return raw_name(r);  // demangled when made
  std::atomic<const std::string*>& slot = demangled_[i];
  const std::string* d = slot.load(std::memory_order_acquire);
  // Demangled before: its text, without measuring the mangled name (C++
  // names run to hundreds of bytes; measuring them was 4% of `script -G`).
  if (d != nullptr && d != &kNotMangled) return *d;
  const std::string_view name = raw_name(r);
  if (!name.starts_with("_Z")) return name;
  if (d == nullptr) {
    // Demangled by whichever thread gets here first; a thread that loses the
    // race drops its copy and takes the winner's, so the view is one.
    std::optional<std::string> shown = demangle(name, full_signatures_);
    auto made = shown ? std::make_unique<const std::string>(std::move(*shown)) : nullptr;
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
  const std::vector<bool> text = text_sections(elf);
  auto add = [&](const GElf_Sym& sym) {
    if (sym.st_name == 0 || sym.st_name >= ends_before || strings[sym.st_name] == '\0') return;
    if (!is_function(sym) && !is_label(sym, text)) return;
    const int bind = GELF_ST_BIND(sym.st_info);
    const uint32_t alias_class = (sym.st_size == 0 ? kUnsized : 0u) | (bind != STB_GLOBAL ? kNotGlobal : 0u) |
                                 (bind == STB_WEAK ? kWeak : 0u);
    raw.push_back({sym.st_value, sym.st_size, sym.st_name, alias_class});
  };
  raw.reserve(raw.size() + data->d_size / chosen_sh.sh_entsize);
  // Mapped in one call: ~100k symbols are ~3 MB written once, which faulted
  // page by page was most of the page faults of a small report.
  prefault(raw.data() + raw.size(), (raw.capacity() - raw.size()) * sizeof(Raw));
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
      // Unsized symbols were given their extent at load.
      if (vaddr - s.addr < s.size) i = at;
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

uint32_t ElfCache::image_slot(std::string_view name, std::span<const std::byte> image) {
  auto s = std::make_unique<Slot>();
  s->path = std::string(name);
  s->image = image;
  slots_.push_back(std::move(s));
  return static_cast<uint32_t>(slots_.size() - 1);
}

const ElfSymbols* ElfCache::get(uint32_t slot) const {
  if (slot >= slots_.size()) return nullptr;
  const Slot& s = *slots_[slot];
  // After the first load this is one acquire load: std::call_once itself
  // costs a few dozen instructions per call even when done.
  if (s.loaded.load(std::memory_order_acquire)) return s.elf.get();
  std::call_once(s.once, [&s, this] {
    auto loaded = s.image.empty() ? ElfSymbols::load(s.path, s.debug_root, full_signatures_)
                                  : ElfSymbols::load_image(s.image, s.path, full_signatures_);
    if (loaded.ok()) s.elf = std::move(loaded).value();
    s.loaded.store(true, std::memory_order_release);
  });
  return s.elf.get();
}

}  // namespace bpfprof::symbols
