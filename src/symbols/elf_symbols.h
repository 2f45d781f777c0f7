// SPDX-License-Identifier: Apache-2.0
// Function symbols of one ELF file (libelf): .symtab, else .dynsym, with the
// code labels of text sections (ld.so's `_start`) and a `name@plt` symbol per
// PLT entry; the PT_LOAD segments that turn a file offset into a virtual
// address, and the GNU build id. Among aliases at one address the one Linux
// perf shows is kept. Loaded once per path, lazily and thread-safely, because
// pass 2 symbolizes in parallel and most mapped files are never sampled.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"

typedef struct Elf Elf;  // libelf's handle, kept out of this header

namespace bpfprof::symbols {

class ElfSymbols {
 public:
  struct Symbol {
    uint64_t addr = 0;
    // An unsized symbol's runs to the next symbol or its code section's end.
    uint64_t size = 0;
    std::string_view name;
  };

  // Symbols of `path`; if it has no .symtab but a build id, they come from
  // <debug_root>/usr/lib/debug/.build-id/xx/yyyy.debug when that exists.
  // C++ names are demangled, each the first time find() returns it (a large
  // C++ binary has ~100k symbols, of which a profile hits a few hundred):
  // without parameters (demangle.h) unless `full_signatures`.
  static Result<std::unique_ptr<ElfSymbols>> load(const std::string& path,
                                                   const std::string& debug_root = "",
                                                   bool full_signatures = false);
  // The same from an image in memory (a recording's stored vDSO), copied.
  static Result<std::unique_ptr<ElfSymbols>> load_image(std::span<const std::byte> image,
                                                        std::string_view what,
                                                        bool full_signatures = false);
  ElfSymbols() = default;
  ~ElfSymbols();
  ElfSymbols(const ElfSymbols&) = delete;
  ElfSymbols& operator=(const ElfSymbols&) = delete;

  const std::vector<uint8_t>& build_id() const { return build_id_; }
  // File offset -> link-time virtual address, through the PT_LOAD that holds it.
  std::optional<uint64_t> offset_to_vaddr(uint64_t offset) const;
  // The function symbol covering vaddr, if any. Thread-safe; a symbol's name
  // is the same view every time.
  std::optional<Symbol> find(uint64_t vaddr) const;
  size_t size() const { return symbols_.size(); }

 private:
  struct Raw {
    uint64_t addr, size;
    uint32_t name_off;  // into the string table (NUL-terminated there), or plt_names_
    // Bit 1: unsized; bit 0: not global; bit 2: weak; kPltName: the name is
    // in plt_names_. The sort orders aliases by the low two bits, then file
    // order; keep_preferred_aliases() then picks one per address.
    uint32_t alias_class;
  };
  static constexpr uint32_t kNotGlobal = 1, kUnsized = 2, kWeak = 4, kPltName = 1u << 31;
  static void sort_by_address(std::vector<Raw>& raw);
  // Of aliases at one address (sorted), the one perf shows: sized, not weak,
  // global, fewest leading underscores, longest name, first in the file.
  void keep_preferred_aliases(std::vector<Raw>& raw) const;
  std::string_view raw_name(const Raw& r) const;
  // Appends the function symbols and text labels of .symtab (else .dynsym),
  // and sets `names` to the string table their name offsets are in; true if
  // .symtab.
  static bool read_symbols(Elf* elf, std::vector<Raw>& raw, const char*& names);
  // Appends a `name@plt` symbol per .rela.plt entry, at its PLT entry
  // (x86-64 and arm64 layouts); their names go into plt_names_.
  void add_plt_symbols(Elf* elf, std::vector<Raw>& raw);

  struct Segment {
    uint64_t offset = 0, filesz = 0, vaddr = 0;
  };
  std::vector<uint8_t> build_id_;
  std::vector<Segment> segments_;
  // The shown name of symbols_[i]: its own for plain names, its demangled
  // form once find() made it for a mangled one.
  std::string_view shown_name(size_t i) const;

  // The file the symbols came from, mapped, and the string table their names
  // are in, used where it lies: a large binary has ~100k names and a profile
  // shows a few hundred, so none is copied or measured until it is shown.
  struct Image;
  std::unique_ptr<Image> image_;
  // load() and load_image() past opening: `fd` is the file's (invalid for
  // an image in memory).
  static Result<std::unique_ptr<ElfSymbols>> load_elf(UniqueFd fd, std::unique_ptr<Image> image,
                                                      const std::string& what,
                                                      const std::string& debug_root, bool full_signatures);
  const char* names_ = nullptr;
  std::string plt_names_;  // "name@plt\0..." of the PLT symbols
  bool full_signatures_ = false;
  std::vector<Raw> symbols_;  // by address, one per address
  // Per symbol, the demangled name (owned) once made; null before. Names that
  // do not demangle point to kNotMangled.
  std::unique_ptr<std::atomic<const std::string*>[]> demangled_;
  uint64_t serial_ = 0;  // unique per loaded file: find()'s memo is keyed by it
};

// One ElfSymbols per path (with the --symfs prefix), loaded on first use.
class ElfCache {
 public:
  static constexpr uint32_t kNoSlot = UINT32_MAX;
  explicit ElfCache(std::string symfs, bool full_signatures = false)
      : symfs_(std::move(symfs)), full_signatures_(full_signatures) {}

  // Pass 1 (single thread): the slot of `path`.
  uint32_t slot(std::string_view path);
  // Before pass 1: the slot whose symbols come from `image` (an ELF image in
  // memory, e.g. the recording's vDSO; it must outlive the cache), read on
  // first use like a file.
  uint32_t image_slot(std::string_view name, std::span<const std::byte> image);
  // Pass 2 (any thread): the file's symbols, or null if it cannot be read.
  const ElfSymbols* get(uint32_t slot) const;

 private:
  struct Slot {
    std::string path;
    std::string debug_root;
    std::span<const std::byte> image;  // non-empty: read from memory, not path
    mutable std::once_flag once;
    mutable std::atomic<bool> loaded{false};  // set once `elf` is final
    mutable std::unique_ptr<ElfSymbols> elf;
  };
  std::string symfs_;
  bool full_signatures_ = false;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::unordered_map<std::string, uint32_t> index_;
};

}  // namespace bpfprof::symbols
