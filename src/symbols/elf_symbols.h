// SPDX-License-Identifier: Apache-2.0
// Function symbols of one ELF file (libelf): .symtab, else .dynsym, the
// PT_LOAD segments that turn a file offset into a virtual address, and the
// GNU build id. Loaded once per path, lazily and thread-safely, because pass 2
// symbolizes in parallel and most mapped files are never sampled.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/error.h"

typedef struct Elf Elf;  // libelf's handle, kept out of this header

namespace bpfprof::symbols {

class ElfSymbols {
 public:
  struct Symbol {
    uint64_t addr = 0;
    uint64_t size = 0;  // 0: unknown, the symbol runs to the next one
    std::string_view name;
  };

  // Symbols of `path`; if it has no .symtab but a build id, they come from
  // <debug_root>/usr/lib/debug/.build-id/xx/yyyy.debug when that exists.
  // C++ names are demangled, each the first time find() returns it (a large
  // C++ binary has ~100k symbols, of which a profile hits a few hundred).
  static Result<std::unique_ptr<ElfSymbols>> load(const std::string& path,
                                                   const std::string& debug_root = "");
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
    uint32_t name_off;  // into the string table, NUL-terminated there
    // Among aliases at one address, lower first: 0 sized global, 1 sized
    // local, 2 unsized global, 3 unsized local; then file order.
    uint32_t alias_class;
  };
  static void sort_by_address(std::vector<Raw>& raw);
  // Appends the function symbols of .symtab (else .dynsym), and sets `names`
  // to the string table their name offsets are in; true if .symtab.
  static bool read_symbols(Elf* elf, std::vector<Raw>& raw, const char*& names);

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
  const char* names_ = nullptr;
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
  explicit ElfCache(std::string symfs) : symfs_(std::move(symfs)) {}

  // Pass 1 (single thread): the slot of `path`.
  uint32_t slot(std::string_view path);
  // Pass 2 (any thread): the file's symbols, or null if it cannot be read.
  const ElfSymbols* get(uint32_t slot) const;

 private:
  struct Slot {
    std::string path;
    std::string debug_root;
    mutable std::once_flag once;
    mutable std::atomic<bool> loaded{false};  // set once `elf` is final
    mutable std::unique_ptr<ElfSymbols> elf;
  };
  std::string symfs_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::unordered_map<std::string, uint32_t> index_;
};

}  // namespace bpfprof::symbols
