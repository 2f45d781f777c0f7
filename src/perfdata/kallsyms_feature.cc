// SPDX-License-Identifier: Apache-2.0
// bpfprof's kallsyms snapshot section (feature 250): the kernel and module
// text symbols /proc/kallsyms listed when recording started, as a table
// sorted by address (kallsyms_table.h): versions 1 (the text), 2 (the table
// as it is) and 3 (the table in one zstd frame). Version 5, what record
// writes (the table in blocks decoded when a lookup first needs them), is in
// kallsyms_blocked.cc. perf skips feature numbers it does not know.
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/prefault.h"
#include "base/text_lines.h"
#include "perfdata/features.h"
#include "perfdata/kallsyms_codec.h"
#include "perfdata/kallsyms_line.h"
#include "perfdata/kallsyms_table.h"

namespace bpfprof::perfdata {
namespace {
using namespace kallsyms_codec;

constexpr uint32_t kVersionText = 1;
constexpr uint32_t kVersionTable = 2;
constexpr uint32_t kVersionCompact = 3;
constexpr uint32_t kVersionInStream = 4;
constexpr uint32_t kStored = 0;
constexpr uint64_t kMaxRawSize = 256ull << 20;
// Version 1 compressed at level 1 (what older recorders wrote).
constexpr int kLevel = 1;

// A decompressed table: its bytes are written once, by zstd.
using Table = std::vector<std::byte, UninitAllocator<std::byte>>;

bool is_global(char t) { return t >= 'A' && t <= 'Z'; }

// The body of version 1 (text, into a std::string) or 3 (a table prepared
// for compression, into a Table: no second copy of ~5 MB, and nothing
// written before the decompressor writes it), decompressed: both start u32
// version, u32 compression, u64 raw_size.
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
  const uint64_t body_at = c.absolute_pos();
  const Bytes body = section.subspan(c.pos());
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
    return make_error_at(Errc::kUnsupported, base_offset + 4,
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
    append_bytes(out, buf.get(), o.pos);
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
  // Sized once: grown by doubling, its copies touched ~12 MB of fresh
  // memory more for a 121k-symbol kernel, each page a fault to zero.
  std::vector<Raw> raw;
  raw.reserve(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  uint64_t etext = 0;
  for_each_line(text, [&](std::string_view line) {
    const std::optional<KallsymsLine> l = parse_kallsyms_line(line);
    if (!l) return;
    if (l->module.empty() && l->name == "_etext") etext = l->addr;
    // _etext is a marker, not code; [bpf] lines are the KSYMBOL timeline's.
    if (!is_text_type(l->type) || l->module == "bpf" || l->addr == 0 || l->name == "_etext") return;
    raw.push_back({l->addr, l->name, l->module, is_global(l->type)});
  });
  // Aliases at one address: the global name wins, then the first listed
  // (names are views into `text`, so their order there is the listing's).
  // A total order: sorted in place, where a stable sort took a second
  // array of the table's size, fresh memory to fault in.
  auto before = [](const Raw& a, const Raw& b) {
    if (a.addr != b.addr) return a.addr < b.addr;
    if (a.global != b.global) return a.global > b.global;
    return a.name.data() < b.name.data();
  };
  // /proc/kallsyms is mostly in address order already: check before sorting.
  if (!std::is_sorted(raw.begin(), raw.end(), before)) std::sort(raw.begin(), raw.end(), before);
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

std::string_view KallsymsTable::module_dso(uint32_t m) const {
  return blocks_ ? block_module_dso(m) : pool_string(count_ + m - 1);
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
  if (blocks_) return block_floor(a);
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
