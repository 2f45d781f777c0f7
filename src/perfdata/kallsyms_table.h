// SPDX-License-Identifier: Apache-2.0
// The kallsyms snapshot (feature 250) as a table searched where it lies: the
// kernel and module text symbols in address order, one per address, with a
// string pool. Version 2 of the section is this table, so opening it checks
// its bounds and order and builds nothing; version 3 (the table delta-coded
// and zstd-compressed, features.h) is decompressed into a table of its own;
// version 1 (older files: zstd of the /proc/kallsyms text) is decompressed
// and parsed. Version 4 only says where in the data the in-stream copy is;
// the reader puts that copy in its place. Version 5 (what record writes now)
// holds the table in blocks of 1024 symbols, each a zstd frame, behind an
// index of each block's first address: opening it reads the index, and a
// block is decompressed when a lookup first needs it (a 1 s recording's
// report names ~25 kernel symbols, in ~11 of 119 blocks).
//
// Version 2 layout (little-endian, no alignment assumed):
//   u32 version (2), u32 flags (0), u64 count, u64 etext (0 = unknown),
//   u32 modules, u32 pool_size,
//   u64 addr[count]              strictly ascending
//   u32 name_end[count+modules]  end of each name in the pool (a name starts
//                                where the previous one ends): the symbols'
//                                names, then the modules' ("[name]")
//   u16 module[count]            0 = core kernel, m = module m-1
//   char pool[pool_size]
// Kept: t/T/w/W symbols except [bpf] lines, address 0 and _etext (its address
// is `etext`); at one address the first global name listed, else the first.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/byte_cursor.h"
#include "base/error.h"
#include "perfdata/kallsyms_line.h"

namespace bpfprof::perfdata {

class KallsymsTable {
 public:
  KallsymsTable() = default;
  // A section 250 payload. Versions 2 and 5 are used in place: `blob` must
  // outlive the table. Errors name the field and its offset (`base_offset` =
  // the payload's file offset).
  static Result<KallsymsTable> open(Bytes blob, uint64_t base_offset);
  // From /proc/kallsyms text (a live session); owns its table.
  static KallsymsTable from_text(std::string_view text);

  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  uint64_t etext() const { return etext_; }
  uint64_t addr(size_t i) const {
    return blocks_ ? block_addr(i) : load_unaligned<uint64_t>(addrs_ + 8 * i);
  }
  std::string_view name(size_t i) const { return blocks_ ? block_name(i) : pool_string(i); }
  // 0 = core kernel, else module_dso(module(i)) names it.
  uint32_t module(size_t i) const {
    return blocks_ ? block_module(i) : load_unaligned<uint16_t>(modules_ + 2 * i);
  }
  uint32_t module_count() const { return module_count_; }
  // "[name]" of module m (1-based, as module() returns).
  std::string_view module_dso(uint32_t m) const;
  // The index of the last symbol starting at or before `addr`; size() if none.
  size_t floor(uint64_t addr) const;

  // Version 5: a block is decompressed when a lookup first needs it (safe
  // from any number of threads; copies of the table share the blocks). A
  // block that does not decompress, or decompresses to a table that lies,
  // holds no symbol: floor() finds none in it, its names are empty and its
  // module numbers 0; damage() then says which block and where.
  size_t blocks_decoded() const;
  std::optional<Error> damage() const;

 private:
  struct Blocks;
  struct Block;
  static Result<KallsymsTable> open_blocked(Bytes blob, uint64_t base_offset);
  Status check(Bytes blob, uint64_t base_offset);
  uint32_t name_end(size_t i) const { return load_unaligned<uint32_t>(ends_ + 4 * i); }
  std::string_view pool_string(size_t i) const {
    const uint32_t begin = i == 0 ? 0 : name_end(i - 1);
    return {pool_ + begin, name_end(i) - begin};
  }
  // Version 5's accessors (kallsyms_blocked.cc).
  uint64_t block_addr(size_t i) const;
  std::string_view block_name(size_t i) const;
  uint32_t block_module(size_t i) const;
  std::string_view block_module_dso(uint32_t m) const;
  size_t block_floor(uint64_t addr) const;

  std::shared_ptr<const void> owned_;  // a table made here
  std::shared_ptr<Blocks> blocks_;     // version 5
  size_t count_ = 0;
  uint32_t module_count_ = 0;
  uint64_t etext_ = 0;
  const std::byte* addrs_ = nullptr;
  const std::byte* ends_ = nullptr;
  const std::byte* modules_ = nullptr;
  const char* pool_ = nullptr;
};

}  // namespace bpfprof::perfdata
