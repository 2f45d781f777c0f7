// SPDX-License-Identifier: Apache-2.0
// bpfprof's kallsyms snapshot section (feature 250): the kernel and module
// text symbols /proc/kallsyms listed when recording started, as a table
// sorted by address (kallsyms_table.h). Written as version 5: the table in
// blocks of symbols, each a zstd frame, decoded when a lookup first needs
// it. Versions 1 (the text), 2 (the table as it is) and 3 (the table in one
// frame) are still read. perf skips feature numbers it does not know.
#include <sys/mman.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/prefault.h"
#include "base/text_lines.h"
#include "perfdata/features.h"
#include "perfdata/kallsyms_line.h"
#include "perfdata/kallsyms_table.h"

namespace bpfprof::perfdata {
namespace {

constexpr uint32_t kVersionText = 1;
constexpr uint32_t kVersionTable = 2;
constexpr uint32_t kVersionCompact = 3;
constexpr uint32_t kVersionInStream = 4;
constexpr uint32_t kVersionBlocked = 5;
// Version 5: symbols per block. 1024 (119 blocks for 121k symbols) packs the
// table into 0.73 MB, against 0.63 MB in one frame, and decodes a block in
// ~30 us; 512 costs 0.77 MB, 2048 decodes in ~50-70 us.
constexpr uint32_t kSymbolsPerBlock = 1024;
constexpr uint32_t kMaxSymbolsPerBlock = 1u << 16;
// A block's bytes per symbol: address, name end and module (14), and at most
// this many of name (the kernel's KSYM_NAME_LEN is 512).
constexpr uint64_t kMaxNameBytes = 1024;
constexpr uint32_t kStored = 0;
constexpr uint32_t kZstd = 1;
constexpr uint64_t kMaxRawSize = 256ull << 20;
constexpr size_t kTableHeader = 32;
// Version 1 compressed at level 1 (what older recorders wrote).
constexpr int kLevel = 1;
// Version 3: the level where a 4.6 MB table of 121k symbols becomes 0.63 MB
// in ~50 ms, once per recording (level 3: 0.72 MB in ~25 ms; 19: 0.61 MB in
// 2.6 s).
constexpr int kCompactLevel = 6;

// A decompressed table: its bytes are written once, by zstd.
using Table = std::vector<std::byte, UninitAllocator<std::byte>>;

struct DCtxFree {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};

bool is_global(char t) { return t >= 'A' && t <= 'Z'; }

// A zstd frame (or, with `compression` kStored, the bytes as they are) that
// must decompress to exactly `raw_size` bytes, into a std::string (version
// 1's text) or a Table (no second copy of ~5 MB, and nothing written
// before the decompressor writes it).
// `body_at` is the body's file offset, for errors.
template <class Out>
Result<Out> decompress(Bytes body, uint64_t body_at, uint32_t compression, uint64_t raw_size) {
  if (raw_size > kMaxRawSize) {
    return make_error_at(Errc::kBadRecord, body_at,
                         "KALLSYMS raw_size " + std::to_string(raw_size) + " above 256 MiB");
  }
  if (compression == kStored) {
    if (body.size() != raw_size) {
      return make_error_at(Errc::kBadRecord, body_at,
                           "KALLSYMS holds " + std::to_string(body.size()) + " bytes, raw_size " +
                               std::to_string(raw_size));
    }
    const auto* p = reinterpret_cast<const typename Out::value_type*>(body.data());
    return Out(p, p + body.size());
  }
  if (compression != kZstd) {
    return make_error_at(Errc::kUnsupported, body_at,
                         "KALLSYMS compression " + std::to_string(compression));
  }
  std::unique_ptr<ZSTD_DCtx, DCtxFree> ctx(ZSTD_createDCtx());
  if (!ctx) return make_error(Errc::kInternal, "ZSTD_createDCtx failed");
  // A frame that says its size (the recorder's do) is decoded in one call
  // straight into the output, its pages mapped at once: no window buffers
  // inside zstd and no copy (streamed, the decode took ~380 of the 890 page
  // faults of a 1 s recording's report). One whose size differs from
  // raw_size is refused before anything is allocated. Frames without a
  // size, or claiming more than 256 times their bytes (a real table packs
  // ~5x; a lie must not make us touch memory it never fills), are streamed
  // below.
  const unsigned long long frame_size = ZSTD_getFrameContentSize(body.data(), body.size());
  if (frame_size != ZSTD_CONTENTSIZE_UNKNOWN && frame_size != ZSTD_CONTENTSIZE_ERROR &&
      frame_size / 256 <= body.size()) {
    if (frame_size != raw_size) {
      return make_error_at(Errc::kBadRecord, body_at,
                           "KALLSYMS zstd frame holds " + std::to_string(frame_size) +
                               " bytes, raw_size says " + std::to_string(raw_size));
    }
    Out out;
    out.reserve(static_cast<size_t>(raw_size));
    // A Table's allocator maps its pages itself.
    if constexpr (std::is_same_v<Out, std::string>) prefault(out.data(), out.capacity());
    out.resize(static_cast<size_t>(raw_size));
    const size_t n =
        ZSTD_decompressDCtx(ctx.get(), out.data(), out.size(), body.data(), body.size());
    if (ZSTD_isError(n)) {
      if (ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall) {
        return make_error_at(Errc::kBadRecord, body_at,
                             "KALLSYMS decompresses beyond raw_size " + std::to_string(raw_size));
      }
      return make_error_at(Errc::kBadRecord, body_at,
                           std::string("KALLSYMS zstd: ") + ZSTD_getErrorName(n));
    }
    if (n != raw_size) {
      return make_error_at(Errc::kBadRecord, body_at,
                           "KALLSYMS decompresses to " + std::to_string(n) +
                               " bytes, raw_size says " + std::to_string(raw_size));
    }
    return out;
  }
  // Streamed through a fixed buffer (one byte more than raw_size allows, so
  // output beyond it shows) into a container that grows with the real output
  // (no zero-filling, geometric growth): a lying raw_size costs nothing and
  // extra output is caught one chunk past it. The buffer is not zeroed.
  Out out;
  out.reserve(static_cast<size_t>(std::min<uint64_t>(raw_size, 64ull << 20)));
  const size_t buf_size = static_cast<size_t>(std::min<uint64_t>(raw_size, 256 << 10) + 1);
  auto buf = std::make_unique_for_overwrite<typename Out::value_type[]>(buf_size);
  ZSTD_inBuffer in{body.data(), body.size(), 0};
  size_t ret = 1;
  while (in.pos < in.size || ret != 0) {
    ZSTD_outBuffer o{buf.get(), buf_size, 0};
    ret = ZSTD_decompressStream(ctx.get(), &o, &in);
    if (ZSTD_isError(ret)) {
      return make_error_at(Errc::kBadRecord, body_at,
                           std::string("KALLSYMS zstd: ") + ZSTD_getErrorName(ret));
    }
    if (o.pos > raw_size - out.size()) {
      return make_error_at(Errc::kBadRecord, body_at,
                           "KALLSYMS decompresses beyond raw_size " + std::to_string(raw_size));
    }
    out.insert(out.end(), buf.get(), buf.get() + o.pos);
    if (o.pos == 0 && in.pos == in.size && ret != 0) {
      return make_error_at(Errc::kTruncated, body_at, "KALLSYMS zstd frame is incomplete");
    }
  }
  if (out.size() != raw_size) {
    return make_error_at(Errc::kBadRecord, body_at,
                         "KALLSYMS decompresses to " + std::to_string(out.size()) +
                             " bytes, raw_size says " + std::to_string(raw_size));
  }
  return out;
}

// The body of version 1 or 3: u32 version, u32 compression, u64 raw_size,
// then the (compressed) bytes.
template <class Out>
Result<Out> decode_body(Bytes section, uint64_t base_offset) {
  ByteCursor c(section, base_offset);
  BPFPROF_ASSIGN_OR_RETURN(uint32_t version, c.u32("KALLSYMS version"));
  BPFPROF_ASSIGN_OR_RETURN(uint32_t compression, c.u32("KALLSYMS compression"));
  BPFPROF_ASSIGN_OR_RETURN(uint64_t raw_size, c.u64("KALLSYMS raw_size"));
  (void)version;
  if (raw_size > kMaxRawSize) {
    return make_error_at(Errc::kBadRecord, base_offset + 8,
                         "KALLSYMS raw_size " + std::to_string(raw_size) + " above 256 MiB");
  }
  if (compression != kStored && compression != kZstd) {
    return make_error_at(Errc::kUnsupported, base_offset + 4,
                         "KALLSYMS compression " + std::to_string(compression));
  }
  return decompress<Out>(section.subspan(c.pos()), c.absolute_pos(), compression, raw_size);
}

// Version 3 stores a version 2 table with its addresses and name ends as
// differences from the one before (small numbers, mostly zero bytes, that
// zstd packs well). `forward` makes the differences, else the sums. False
// when the table's sizes do not fill it (nothing is touched then).
bool delta_code(std::span<std::byte> table, bool forward) {
  if (table.size() < kTableHeader) return false;
  const uint64_t count = load_unaligned<uint64_t>(table.data() + 8);
  const uint32_t modules = load_unaligned<uint32_t>(table.data() + 24);
  const uint32_t pool = load_unaligned<uint32_t>(table.data() + 28);
  const uint64_t rest = table.size() - kTableHeader;
  if (count > rest / 14 || count * 14 + uint64_t{modules} * 4 + pool != rest) return false;
  auto code = [&]<class T>(std::byte* at, uint64_t n) {
    if (forward) {
      for (uint64_t i = n; i-- > 1;) {
        const T v = load_unaligned<T>(at + sizeof(T) * i) - load_unaligned<T>(at + sizeof(T) * (i - 1));
        std::memcpy(at + sizeof(T) * i, &v, sizeof v);
      }
    } else {
      for (uint64_t i = 1; i < n; i++) {
        const T v = load_unaligned<T>(at + sizeof(T) * i) + load_unaligned<T>(at + sizeof(T) * (i - 1));
        std::memcpy(at + sizeof(T) * i, &v, sizeof v);
      }
    }
  };
  std::byte* addrs = table.data() + kTableHeader;
  code.operator()<uint64_t>(addrs, count);
  code.operator()<uint32_t>(addrs + 8 * count, count + modules);
  return true;
}

// Version 3: the table, decompressed and summed back (checked by the caller).
Result<Table> decode_compact(Bytes section, uint64_t base_offset) {
  BPFPROF_ASSIGN_OR_RETURN(Table table, decode_body<Table>(section, base_offset));
  if (!delta_code(table, false)) {
    return make_error_at(Errc::kBadRecord, base_offset + 16,
                         "KALLSYMS compact table's sizes do not fill its " +
                             std::to_string(table.size()) + " bytes");
  }
  return table;
}

}  // namespace

std::vector<std::byte> encode_kallsyms_compact(std::string_view text) {
  std::vector<std::byte> table = encode_kallsyms(text);
  delta_code(table, true);
  std::vector<std::byte> out;
  append_pod(out, kVersionCompact);
  append_pod(out, kZstd);
  append_pod(out, static_cast<uint64_t>(table.size()));
  const size_t at = out.size();
  out.resize(at + ZSTD_compressBound(table.size()));
  const size_t n =
      ZSTD_compress(out.data() + at, out.size() - at, table.data(), table.size(), kCompactLevel);
  // A compressBound-sized buffer cannot be too small: the table stays as it
  // is (version 2) should zstd fail all the same.
  if (ZSTD_isError(n)) return encode_kallsyms(text);
  out.resize(at + n);
  return out;
}

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

std::vector<std::byte> encode_kallsyms_in_stream_ref(uint64_t offset, uint64_t size) {
  std::vector<std::byte> out;
  append_pod(out, kVersionInStream);
  append_pod(out, uint32_t{0});
  append_pod(out, offset);
  append_pod(out, size);
  return out;
}

std::optional<std::pair<uint64_t, uint64_t>> kallsyms_in_stream_ref(Bytes section) {
  if (section.size() != 24 || load_unaligned<uint32_t>(section.data()) != kVersionInStream)
    return std::nullopt;
  return std::pair{load_unaligned<uint64_t>(section.data() + 8),
                   load_unaligned<uint64_t>(section.data() + 16)};
}

std::vector<std::byte> encode_kallsyms(std::string_view text) {
  struct Raw {
    uint64_t addr;
    std::string_view name, module;
    bool global;
  };
  std::vector<Raw> raw;
  uint64_t etext = 0;
  for_each_line(text, [&](std::string_view line) {
    const std::optional<KallsymsLine> l = parse_kallsyms_line(line);
    if (!l) return;
    if (l->module.empty() && l->name == "_etext") etext = l->addr;
    // _etext is a marker, not code; [bpf] lines are the KSYMBOL timeline's.
    if (!is_text_type(l->type) || l->module == "bpf" || l->addr == 0 || l->name == "_etext") return;
    raw.push_back({l->addr, l->name, l->module, is_global(l->type)});
  });
  // Aliases at one address: the global name wins, then the first listed.
  auto before = [](const Raw& a, const Raw& b) {
    if (a.addr != b.addr) return a.addr < b.addr;
    return a.global > b.global;
  };
  // /proc/kallsyms is mostly in address order already: check before sorting.
  if (!std::is_sorted(raw.begin(), raw.end(), before)) std::stable_sort(raw.begin(), raw.end(), before);
  raw.erase(std::unique(raw.begin(), raw.end(), [](const Raw& a, const Raw& b) { return a.addr == b.addr; }),
            raw.end());

  // Module numbers in order of first appearance; names beyond what the u16
  // numbers and u32 pool offsets can hold are left out (no kernel has them).
  std::unordered_map<std::string_view, uint16_t> module_of;
  std::vector<std::string_view> modules;
  std::vector<uint16_t> module_index;
  std::vector<uint32_t> ends;
  uint64_t pool = 0;
  constexpr uint64_t kMaxPool = std::numeric_limits<uint32_t>::max();
  size_t kept = 0;
  std::string_view last_module;  // a module's symbols come in a row
  uint16_t last_m = 0;
  for (const Raw& r : raw) {
    uint16_t m = 0;
    if (!r.module.empty() && r.module == last_module) {
      m = last_m;
    } else if (!r.module.empty()) {
      auto it = module_of.find(r.module);
      if (it == module_of.end()) {
        if (modules.size() + 1 >= std::numeric_limits<uint16_t>::max()) break;
        modules.push_back(r.module);
        it = module_of.emplace(r.module, static_cast<uint16_t>(modules.size())).first;
      }
      m = last_m = it->second;
      last_module = r.module;
    }
    if (pool + r.name.size() > kMaxPool / 2) break;
    pool += r.name.size();
    ends.push_back(static_cast<uint32_t>(pool));
    module_index.push_back(m);
    kept++;
  }
  for (std::string_view mod : modules) {
    pool += mod.size() + 2;
    ends.push_back(static_cast<uint32_t>(pool));
  }

  std::vector<std::byte> out;
  out.reserve(kTableHeader + kept * 14 + modules.size() * 4 + pool);
  append_pod(out, kVersionTable);
  append_pod(out, uint32_t{0});
  append_pod(out, static_cast<uint64_t>(kept));
  append_pod(out, etext);
  append_pod(out, static_cast<uint32_t>(modules.size()));
  append_pod(out, static_cast<uint32_t>(pool));
  for (size_t i = 0; i < kept; i++) append_pod(out, raw[i].addr);
  for (uint32_t e : ends) append_pod(out, e);
  for (uint16_t m : module_index) append_pod(out, m);
  auto append_text = [&](std::string_view s) {
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    out.insert(out.end(), p, p + s.size());
  };
  for (size_t i = 0; i < kept; i++) append_text(raw[i].name);
  for (std::string_view mod : modules) {
    append_text("[");
    append_text(mod);
    append_text("]");
  }
  return out;
}

std::vector<std::byte> encode_kallsyms_v1(std::string_view text) {
  std::vector<std::byte> out;
  append_pod(out, kVersionText);
  append_pod(out, kZstd);
  append_pod(out, static_cast<uint64_t>(text.size()));
  const size_t at = out.size();
  out.resize(at + ZSTD_compressBound(text.size()));
  const size_t n = ZSTD_compress(out.data() + at, out.size() - at, text.data(), text.size(), kLevel);
  if (ZSTD_isError(n)) {
    // Cannot happen with a compressBound-sized buffer; store it raw then.
    out.resize(at);
    std::memcpy(out.data() + 4, &kStored, sizeof kStored);
    const auto* p = reinterpret_cast<const std::byte*>(text.data());
    out.insert(out.end(), p, p + text.size());
    return out;
  }
  out.resize(at + n);
  return out;
}

Result<KallsymsTable> KallsymsTable::open(Bytes blob, uint64_t base_offset) {
  ByteCursor c(blob, base_offset);
  BPFPROF_ASSIGN_OR_RETURN(uint32_t version, c.u32("KALLSYMS version"));
  if (version == kVersionText) {
    BPFPROF_ASSIGN_OR_RETURN(std::string text, decode_body<std::string>(blob, base_offset));
    return from_text(text);
  }
  if (version == kVersionCompact) {
    BPFPROF_ASSIGN_OR_RETURN(Table table, decode_compact(blob, base_offset));
    auto owned = std::make_shared<const Table>(std::move(table));
    KallsymsTable t;
    // Offsets in its errors are the decompressed table's.
    BPFPROF_TRY(t.check(*owned, base_offset));
    t.owned_ = std::move(owned);
    return t;
  }
  if (version == kVersionBlocked) return open_blocked(blob, base_offset);
  if (version != kVersionTable) {
    return make_error_at(Errc::kUnsupported, base_offset,
                         "KALLSYMS version " + std::to_string(version) + " (we read 1 to 5)");
  }
  KallsymsTable t;
  BPFPROF_TRY(t.check(blob, base_offset));
  return t;
}

namespace {
// A block's bytes: whole pages, mapped in one call before zstd writes them
// (a ~40 KB block faulting page by page cost ~10 faults of ~11 us here).
constexpr size_t kPage = 4096;
struct PageFree {
  void operator()(std::byte* p) const { ::operator delete (p, std::align_val_t{kPage}); }
};
std::unique_ptr<std::byte, PageFree> page_buffer(size_t size) {
  const size_t rounded = (size + kPage - 1) / kPage * kPage;
  auto* p = static_cast<std::byte*>(::operator new (rounded, std::align_val_t{kPage}));
  (void)::madvise(p, rounded, MADV_POPULATE_WRITE);  // advice: pages fault in without it
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
  // finish one wins; a loser frees its copy), read without a lock.
  std::unique_ptr<std::atomic<const Block*>[]> ready;
  std::unique_ptr<std::unique_ptr<Block>[]> owned;  // slot b: written by its winner
  std::atomic<size_t> decoded{0};
  mutable std::mutex mu;
  std::optional<Error> damage;  // under mu: the first damaged block's

  const Block& block(size_t b) {
    const Block* p = ready[b].load(std::memory_order_acquire);
    if (p != nullptr) return *p;
    std::unique_ptr<Block> mine = decode(b);
    const Block* expected = nullptr;
    if (ready[b].compare_exchange_strong(expected, mine.get(), std::memory_order_acq_rel)) {
      if (mine->n != 0) decoded.fetch_add(1, std::memory_order_relaxed);
      owned[b] = std::move(mine);
      return *owned[b];
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
  t->owned = std::make_unique<std::unique_ptr<Block>[]>(blocks);
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

std::string_view KallsymsTable::module_dso(uint32_t m) const {
  if (blocks_)
    return m >= 1 && m <= blocks_->module_dso.size() ? blocks_->module_dso[m - 1]
                                                     : std::string_view();
  return pool_string(count_ + m - 1);
}

size_t KallsymsTable::blocks_decoded() const {
  return blocks_ ? blocks_->decoded.load(std::memory_order_relaxed) : 0;
}

std::optional<Error> KallsymsTable::damage() const {
  if (!blocks_) return std::nullopt;
  std::lock_guard lock(blocks_->mu);
  return blocks_->damage;
}

KallsymsTable KallsymsTable::from_text(std::string_view text) {
  auto blob = std::make_shared<const std::vector<std::byte>>(encode_kallsyms(text));
  KallsymsTable t;
  // The encoder's own output: always well-formed.
  if (!t.check(*blob, 0).ok()) return KallsymsTable();
  t.owned_ = std::move(blob);
  return t;
}

Status KallsymsTable::check(Bytes blob, uint64_t base_offset) {
  ByteCursor c(blob, base_offset);
  BPFPROF_ASSIGN_OR_RETURN(uint32_t version, c.u32("KALLSYMS version"));
  (void)version;
  BPFPROF_ASSIGN_OR_RETURN(uint32_t flags, c.u32("KALLSYMS flags"));
  BPFPROF_ASSIGN_OR_RETURN(uint64_t count, c.u64("KALLSYMS count"));
  BPFPROF_ASSIGN_OR_RETURN(uint64_t etext, c.u64("KALLSYMS etext"));
  BPFPROF_ASSIGN_OR_RETURN(uint32_t modules, c.u32("KALLSYMS modules"));
  BPFPROF_ASSIGN_OR_RETURN(uint32_t pool_size, c.u32("KALLSYMS pool_size"));
  if (flags != 0) {
    return make_error_at(Errc::kUnsupported, base_offset + 4,
                         "KALLSYMS flags " + std::to_string(flags));
  }
  const uint64_t rest = c.remaining();
  // count is bounded first so that the sizes below cannot overflow.
  if (count > rest / 14 || count * 14 + uint64_t{modules} * 4 + pool_size != rest) {
    return make_error_at(Errc::kBadRecord, base_offset + 8,
                         "KALLSYMS table of " + std::to_string(count) + " symbols, " +
                             std::to_string(modules) + " modules and " +
                             std::to_string(pool_size) + " name bytes does not fill its " +
                             std::to_string(rest) + " bytes");
  }
  const std::byte* p = blob.data() + c.pos();
  count_ = static_cast<size_t>(count);
  module_count_ = modules;
  etext_ = etext;
  addrs_ = p;
  ends_ = addrs_ + 8 * count_;
  modules_ = ends_ + 4 * (count_ + modules);
  pool_ = reinterpret_cast<const char*>(modules_ + 2 * count_);
  const uint64_t addrs_at = base_offset + c.pos();
  for (size_t i = 1; i < count_; i++) {
    if (addr(i) <= addr(i - 1)) {
      return make_error_at(Errc::kBadRecord, addrs_at + 8 * i,
                           "KALLSYMS address " + std::to_string(i) + " is not above the one before");
    }
  }
  uint32_t last = 0;
  for (size_t i = 0; i < count_ + modules; i++) {
    const uint32_t e = name_end(i);
    if (e < last || e > pool_size) {
      return make_error_at(Errc::kBadRecord, addrs_at + 8 * count_ + 4 * i,
                           "KALLSYMS name end " + std::to_string(e) + " out of order or past the pool");
    }
    last = e;
  }
  for (size_t i = 0; i < count_; i++) {
    if (module(i) > modules) {
      return make_error_at(Errc::kBadRecord, addrs_at + 12 * count_ + 4 * modules + 2 * i,
                           "KALLSYMS module " + std::to_string(module(i)) + " of " +
                               std::to_string(modules));
    }
  }
  return ok_status();
}

size_t KallsymsTable::floor(uint64_t a) const {
  if (blocks_) {
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
  size_t lo = 0, n = count_;  // first index whose address is above `a`: lo
  while (n > 0) {
    const size_t half = n / 2;
    if (addr(lo + half) <= a) {
      lo += half + 1;
      n -= half + 1;
    } else {
      n = half;
    }
  }
  return lo == 0 ? count_ : lo - 1;
}

}  // namespace bpfprof::perfdata
