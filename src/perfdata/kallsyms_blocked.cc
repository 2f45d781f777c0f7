// SPDX-License-Identifier: Apache-2.0
// The kallsyms snapshot of version 5 (feature 250, what record writes): the
// version 2 table (kallsyms_table.h) in blocks of 1024 symbols, each a zstd
// frame, behind an index of each block's first address and frame end and
// the modules' names (layout in features.h). Opening reads the index; a
// block is decompressed, checked and published when a lookup first needs it.
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "base/prefault.h"
#include "perfdata/features.h"
#include "perfdata/kallsyms_codec.h"
#include "perfdata/kallsyms_table.h"

namespace bpfprof::perfdata {
namespace {
using namespace kallsyms_codec;

// Symbols per block. 1024 (119 blocks for 121k symbols) packs the table
// into 0.73 MB, against 0.63 MB in one frame, and decodes a block in ~30 us;
// 512 costs 0.77 MB, 2048 decodes in ~50-70 us.
constexpr uint32_t kSymbolsPerBlock = 1024;
constexpr uint32_t kMaxSymbolsPerBlock = 1u << 16;
// A block's bytes per symbol: address, name end and module (14), and at most
// this many of name (the kernel's KSYM_NAME_LEN is 512).
constexpr uint64_t kMaxNameBytes = 1024;

}  // namespace

std::vector<std::byte> encode_kallsyms_blocked(std::string_view text) {
  const std::vector<std::byte> table = encode_kallsyms(text);
  const uint64_t count = load_unaligned<uint64_t>(table.data() + 8);
  const uint64_t etext = load_unaligned<uint64_t>(table.data() + 16);
  const uint32_t modules = load_unaligned<uint32_t>(table.data() + 24);
  const std::byte* addrs = table.data() + kTableHeader;
  const std::byte* ends = addrs + 8 * count;
  const std::byte* mods = ends + 4 * (count + modules);
  const std::byte* pool = mods + 2 * count;
  auto addr = [&](uint64_t i) { return load_unaligned<uint64_t>(addrs + 8 * i); };
  auto end = [&](uint64_t i) { return i == 0 ? 0u : load_unaligned<uint32_t>(ends + 4 * (i - 1)); };
  const uint32_t blocks = static_cast<uint32_t>((count + kSymbolsPerBlock - 1) / kSymbolsPerBlock);
  const uint32_t names_end = end(count);

  std::vector<std::byte> out;
  append_pod(out, kVersionBlocked);
  append_pod(out, kZstd);
  append_pod(out, count);
  append_pod(out, etext);
  append_pod(out, modules);
  append_pod(out, kSymbolsPerBlock);
  append_pod(out, blocks);
  append_pod(out, static_cast<uint32_t>(end(count + modules) - names_end));
  for (uint32_t b = 0; b < blocks; b++) append_pod(out, addr(uint64_t{b} * kSymbolsPerBlock));
  const size_t frame_ends = out.size();
  out.resize(out.size() + 8 * size_t{blocks});
  for (uint32_t m = 0; m < modules; m++) append_pod(out, end(count + m + 1) - names_end);
  out.insert(out.end(), pool + names_end, pool + end(count + modules));

  std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  if (!cctx) return table;
  const size_t frames_at = out.size();
  std::vector<std::byte> raw;
  for (uint32_t b = 0; b < blocks; b++) {
    // The block as a little table: address, name end (in the block's names)
    // and module of each symbol, then the names; addresses and ends as
    // differences from the one before (the first address: 0).
    const uint64_t first = uint64_t{b} * kSymbolsPerBlock;
    const uint64_t n = std::min<uint64_t>(count - first, kSymbolsPerBlock);
    raw.clear();
    for (uint64_t i = first; i < first + n; i++)
      append_pod(raw, addr(i) - (i == first ? addr(i) : addr(i - 1)));
    for (uint64_t i = first; i < first + n; i++) append_pod(raw, end(i + 1) - end(i));
    for (uint64_t i = first; i < first + n; i++)
      raw.insert(raw.end(), mods + 2 * i, mods + 2 * i + 2);
    raw.insert(raw.end(), pool + end(first), pool + end(first + n));
    const size_t at = out.size();
    out.resize(at + ZSTD_compressBound(raw.size()));
    const size_t m = ZSTD_compressCCtx(cctx.get(), out.data() + at, out.size() - at, raw.data(),
                                       raw.size(), kCompactLevel);
    // A compressBound-sized buffer cannot be too small: the table stays as
    // it is (version 2) should zstd fail all the same.
    if (ZSTD_isError(m)) return table;
    out.resize(at + m);
    const uint64_t frame_end = out.size() - frames_at;
    std::memcpy(out.data() + frame_ends + 8 * size_t{b}, &frame_end, sizeof frame_end);
  }
  return out;
}

namespace {
// A block's bytes: whole pages, mapped in one call before zstd writes them
// (a ~40 KB block faulting page by page cost ~10 faults of ~11 us here).
constexpr size_t kPage = 4096;
struct PageFree {
  void operator()(std::byte* p) const { ::operator delete(p, std::align_val_t{kPage}); }
};
std::unique_ptr<std::byte, PageFree> page_buffer(size_t size) {
  const size_t rounded = (size + kPage - 1) / kPage * kPage;
  auto* p = static_cast<std::byte*>(::operator new(rounded, std::align_val_t{kPage}));
  populate(p, rounded);
  return std::unique_ptr<std::byte, PageFree>(p);
}
}  // namespace

// Version 5's blocks: one zstd frame each, decompressed on first use.
struct KallsymsTable::Block {
  size_t n = 0;  // symbols; 0 for a damaged block
  const std::byte* addrs = nullptr;
  const std::byte* ends = nullptr;
  const std::byte* modules = nullptr;
  const char* names = nullptr;
  std::unique_ptr<std::byte, PageFree> bytes;
  uint64_t addr(size_t k) const { return load_unaligned<uint64_t>(addrs + 8 * k); }
  uint32_t end(size_t k) const { return k == 0 ? 0 : load_unaligned<uint32_t>(ends + 4 * (k - 1)); }
};

struct KallsymsTable::Blocks {
  Bytes frames;  // the blocks' frames, back to back
  uint64_t frames_at = 0;
  uint64_t count = 0;  // symbols
  uint32_t per_block = 0;
  uint32_t modules = 0;
  std::vector<uint64_t> first_addr;   // per block
  std::vector<uint64_t> frame_begin;  // blocks + 1 offsets into `frames`
  std::vector<uint64_t> raw_size;     // per block, as its frame says
  // The modules' "[name]"s.
  std::vector<std::string_view> module_dso;
  // Each block once decompressed: published once (the first thread to
  // finish one wins; a loser frees its copy), read without a lock, freed
  // with the table.
  std::unique_ptr<std::atomic<const Block*>[]> ready;
  std::atomic<size_t> decoded{0};
  mutable std::mutex mu;
  std::optional<Error> damage;  // under mu: the first damaged block's

  ~Blocks() {
    for (size_t b = 0; ready && b < first_addr.size(); b++) delete ready[b].load();
  }

  const Block& block(size_t b) {
    const Block* p = ready[b].load(std::memory_order_acquire);
    if (p != nullptr) return *p;
    std::unique_ptr<Block> mine = decode(b);
    const Block* expected = nullptr;
    if (ready[b].compare_exchange_strong(expected, mine.get(), std::memory_order_acq_rel)) {
      if (mine->n != 0) decoded.fetch_add(1, std::memory_order_relaxed);
      return *mine.release();
    }
    return *expected;
  }

  std::unique_ptr<Block> decode(size_t b) {
    auto blk = std::make_unique<Block>();
    const uint64_t at = frames_at + frame_begin[b];
    auto fail = [&](const std::string& why) {
      std::lock_guard lock(mu);
      if (!damage) {
        damage =
            make_error_at(Errc::kBadRecord, at, "KALLSYMS block " + std::to_string(b) + ": " + why);
      }
      return std::make_unique<Block>();
    };
    const uint64_t first = uint64_t{b} * per_block;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(per_block, count - first));
    const size_t size = static_cast<size_t>(raw_size[b]);
    thread_local std::unique_ptr<ZSTD_DCtx, DCtxFree> dctx;
    if (!dctx) dctx.reset(ZSTD_createDCtx());
    if (!dctx) return fail("ZSTD_createDCtx failed");
    blk->bytes = page_buffer(size);
    const size_t got =
        ZSTD_decompressDCtx(dctx.get(), blk->bytes.get(), size, frames.data() + frame_begin[b],
                            frame_begin[b + 1] - frame_begin[b]);
    if (ZSTD_isError(got)) return fail(std::string("zstd: ") + ZSTD_getErrorName(got));
    if (got != size)
      return fail("decompresses to " + std::to_string(got) + " bytes, not " + std::to_string(size));
    std::byte* p = blk->bytes.get();
    // Sums of the differences, checked: addresses strictly ascending from
    // the index's first one and below the next block's, name ends in order
    // and filling the block, module numbers known.
    uint64_t a = first_addr[b];
    for (size_t k = 0; k < n; k++) {
      const uint64_t d = load_unaligned<uint64_t>(p + 8 * k);
      if (k == 0 ? d != 0 : (d == 0 || a + d < a))
        return fail("address " + std::to_string(k) + " out of order");
      a += d;
      std::memcpy(p + 8 * k, &a, sizeof a);
    }
    if (b + 1 < first_addr.size() && a >= first_addr[b + 1])
      return fail("addresses reach the next block");
    std::byte* ends = p + 8 * n;
    uint64_t e = 0;
    for (size_t k = 0; k < n; k++) {
      e += load_unaligned<uint32_t>(ends + 4 * k);
      if (e > size - 14 * n) return fail("names run past the block");
      const uint32_t e32 = static_cast<uint32_t>(e);
      std::memcpy(ends + 4 * k, &e32, sizeof e32);
    }
    if (e != size - 14 * n) return fail("names do not fill the block");
    const std::byte* mods = ends + 4 * n;
    for (size_t k = 0; k < n; k++) {
      if (load_unaligned<uint16_t>(mods + 2 * k) > modules)
        return fail("module number out of range");
    }
    blk->n = n;
    blk->addrs = p;
    blk->ends = ends;
    blk->modules = mods;
    blk->names = reinterpret_cast<const char*>(mods + 2 * n);
    return blk;
  }
};

Result<KallsymsTable> KallsymsTable::open_blocked(Bytes blob, uint64_t base_offset) {
  ByteCursor c(blob, base_offset);
  BPFPROF_ASSIGN_OR_RETURN(uint32_t version, c.u32("KALLSYMS version"));
  (void)version;
  BPFPROF_ASSIGN_OR_RETURN(uint32_t compression, c.u32("KALLSYMS compression"));
  BPFPROF_ASSIGN_OR_RETURN(uint64_t count, c.u64("KALLSYMS count"));
  BPFPROF_ASSIGN_OR_RETURN(uint64_t etext, c.u64("KALLSYMS etext"));
  BPFPROF_ASSIGN_OR_RETURN(uint32_t modules, c.u32("KALLSYMS modules"));
  BPFPROF_ASSIGN_OR_RETURN(uint32_t per_block, c.u32("KALLSYMS symbols_per_block"));
  BPFPROF_ASSIGN_OR_RETURN(uint32_t blocks, c.u32("KALLSYMS blocks"));
  BPFPROF_ASSIGN_OR_RETURN(uint32_t module_pool, c.u32("KALLSYMS module_pool_size"));
  if (compression != kZstd) {
    return make_error_at(Errc::kUnsupported, base_offset + 4,
                         "KALLSYMS compression " + std::to_string(compression));
  }
  // blocks * per_block cannot overflow (2^32 * 2^16); count must need
  // exactly `blocks` of them.
  const uint64_t room = uint64_t{blocks} * per_block;
  if (per_block == 0 || per_block > kMaxSymbolsPerBlock || count > room ||
      (blocks > 0 && count <= room - per_block) || modules >= 0xffff) {
    return make_error_at(Errc::kBadRecord, base_offset + 8,
                         "KALLSYMS " + std::to_string(count) + " symbols in " +
                             std::to_string(blocks) + " blocks of " + std::to_string(per_block) +
                             ", " + std::to_string(modules) + " modules");
  }
  if (uint64_t{blocks} * 16 + uint64_t{modules} * 4 + module_pool > c.remaining()) {
    return make_error_at(Errc::kTruncated, base_offset + 32,
                         "KALLSYMS index of " + std::to_string(blocks) + " blocks and " +
                             std::to_string(modules) + " modules past the section's end");
  }
  auto t = std::make_shared<Blocks>();
  t->per_block = per_block;
  t->modules = modules;
  t->count = count;
  t->first_addr.resize(blocks);
  t->frame_begin.assign(size_t{blocks} + 1, 0);
  t->raw_size.resize(blocks);
  const uint64_t index_at = c.absolute_pos();
  for (uint32_t b = 0; b < blocks; b++) {
    BPFPROF_ASSIGN_OR_RETURN(t->first_addr[b], c.u64("KALLSYMS block address"));
    if (b > 0 && t->first_addr[b] <= t->first_addr[b - 1]) {
      return make_error_at(
          Errc::kBadRecord, index_at + 8 * uint64_t{b},
          "KALLSYMS block " + std::to_string(b) + "'s address is not above the one before");
    }
  }
  const uint64_t ends_at = c.absolute_pos();
  for (uint32_t b = 0; b < blocks; b++) {
    BPFPROF_ASSIGN_OR_RETURN(t->frame_begin[b + 1], c.u64("KALLSYMS block end"));
  }
  const uint64_t module_ends_at = c.absolute_pos();
  std::vector<uint32_t> module_end(modules);
  for (uint32_t m = 0; m < modules; m++) {
    BPFPROF_ASSIGN_OR_RETURN(module_end[m], c.u32("KALLSYMS module name end"));
    if (module_end[m] < (m == 0 ? 0 : module_end[m - 1]) || module_end[m] > module_pool) {
      return make_error_at(Errc::kBadRecord, module_ends_at + 4 * uint64_t{m},
                           "KALLSYMS module name end " + std::to_string(module_end[m]) +
                               " out of order or past the names");
    }
  }
  const char* module_names = reinterpret_cast<const char*>(blob.data() + c.pos());
  BPFPROF_TRY(c.skip(module_pool, "KALLSYMS module names"));
  for (uint32_t m = 0; m < modules; m++) {
    const uint32_t begin = m == 0 ? 0 : module_end[m - 1];
    t->module_dso.emplace_back(module_names + begin, module_end[m] - begin);
  }
  t->frames = blob.subspan(c.pos());
  t->frames_at = c.absolute_pos();
  // Each block's frame lies after the one before, the last ends where the
  // section does, and says a size its symbols can have: a decode later can
  // only meet damage inside a frame.
  for (uint32_t b = 0; b < blocks; b++) {
    const uint64_t begin = t->frame_begin[b], end = t->frame_begin[b + 1];
    if (end < begin || end > t->frames.size() || (b + 1 == blocks && end != t->frames.size())) {
      return make_error_at(Errc::kBadRecord, ends_at + 8 * uint64_t{b},
                           "KALLSYMS block " + std::to_string(b) + " ends at " +
                               std::to_string(end) + " of " + std::to_string(t->frames.size()) +
                               " bytes of frames");
    }
    const uint64_t n = std::min<uint64_t>(per_block, count - uint64_t{b} * per_block);
    const unsigned long long said =
        ZSTD_getFrameContentSize(t->frames.data() + begin, static_cast<size_t>(end - begin));
    if (said == ZSTD_CONTENTSIZE_UNKNOWN || said == ZSTD_CONTENTSIZE_ERROR || said < 14 * n ||
        said > (14 + kMaxNameBytes) * n) {
      return make_error_at(Errc::kBadRecord, t->frames_at + begin,
                           "KALLSYMS block " + std::to_string(b) + " is not a frame of " +
                               std::to_string(n) + " symbols");
    }
    t->raw_size[b] = said;
  }
  if (blocks == 0 && !t->frames.empty()) {
    return make_error_at(Errc::kBadRecord, t->frames_at,
                         "KALLSYMS " + std::to_string(t->frames.size()) + " bytes after the index");
  }
  t->ready = std::make_unique<std::atomic<const Block*>[]>(blocks);
  for (uint32_t b = 0; b < blocks; b++) t->ready[b].store(nullptr, std::memory_order_relaxed);
  KallsymsTable table;
  table.count_ = static_cast<size_t>(count);
  table.module_count_ = modules;
  table.etext_ = etext;
  table.blocks_ = std::move(t);
  return table;
}

uint64_t KallsymsTable::block_addr(size_t i) const {
  const size_t b = i / blocks_->per_block, k = i % blocks_->per_block;
  if (k == 0) return blocks_->first_addr[b];
  const Block& blk = blocks_->block(b);
  return k < blk.n ? blk.addr(k) : blocks_->first_addr[b];
}

std::string_view KallsymsTable::block_name(size_t i) const {
  const Block& blk = blocks_->block(i / blocks_->per_block);
  const size_t k = i % blocks_->per_block;
  if (k >= blk.n) return {};
  return {blk.names + blk.end(k), blk.end(k + 1) - blk.end(k)};
}

uint32_t KallsymsTable::block_module(size_t i) const {
  const Block& blk = blocks_->block(i / blocks_->per_block);
  const size_t k = i % blocks_->per_block;
  return k < blk.n ? load_unaligned<uint16_t>(blk.modules + 2 * k) : 0;
}

std::string_view KallsymsTable::block_module_dso(uint32_t m) const {
  return m >= 1 && m <= blocks_->module_dso.size() ? blocks_->module_dso[m - 1] : std::string_view();
}

size_t KallsymsTable::blocks_decoded() const {
  return blocks_ ? blocks_->decoded.load(std::memory_order_relaxed) : 0;
}

std::optional<Error> KallsymsTable::damage() const {
  if (!blocks_) return std::nullopt;
  std::lock_guard lock(blocks_->mu);
  return blocks_->damage;
}

size_t KallsymsTable::block_floor(uint64_t a) const {
  // The block from the index, then the symbol in it.
  const std::vector<uint64_t>& firsts = blocks_->first_addr;
  const auto above = std::upper_bound(firsts.begin(), firsts.end(), a);
  if (above == firsts.begin()) return count_;
  const size_t b = static_cast<size_t>(above - firsts.begin()) - 1;
  const Block& blk = blocks_->block(b);
  if (blk.n == 0) return count_;  // damaged
  size_t lo = 0, n = blk.n;
  while (n > 0) {
    const size_t half = n / 2;
    if (blk.addr(lo + half) <= a) {
      lo += half + 1;
      n -= half + 1;
    } else {
      n = half;
    }
  }
  return b * blocks_->per_block + lo - 1;  // lo >= 1: the first address is <= a
}

}  // namespace bpfprof::perfdata
