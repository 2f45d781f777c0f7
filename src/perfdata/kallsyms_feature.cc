// SPDX-License-Identifier: Apache-2.0
// bpfprof's kallsyms snapshot section (feature 250): the kernel and module
// text symbols /proc/kallsyms listed when recording started. Written as a
// table searched in place (version 2, kallsyms_table.h); files of version 1
// hold the text, zstd-compressed, and are parsed when opened. perf skips
// feature numbers it does not know.
#include <zstd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>
#include <memory>
#include <unordered_map>
#include <vector>

#include "base/text_lines.h"
#include "perfdata/features.h"
#include "perfdata/kallsyms_line.h"
#include "perfdata/kallsyms_table.h"

namespace bpfprof::perfdata {
namespace {

constexpr uint32_t kVersionText = 1;
constexpr uint32_t kVersionTable = 2;
constexpr uint32_t kStored = 0;
constexpr uint32_t kZstd = 1;
constexpr uint64_t kMaxRawSize = 256ull << 20;
constexpr size_t kTableHeader = 32;
// Version 1 compressed at level 1 (what older recorders wrote).
constexpr int kLevel = 1;

struct DCtxFree {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};

bool is_global(char t) { return t >= 'A' && t <= 'Z'; }

// Version 1's text, decompressed.
Result<std::string> decode_text(Bytes section, uint64_t base_offset) {
  ByteCursor c(section, base_offset);
  BPFPROF_ASSIGN_OR_RETURN(uint32_t version, c.u32("KALLSYMS version"));
  BPFPROF_ASSIGN_OR_RETURN(uint32_t compression, c.u32("KALLSYMS compression"));
  BPFPROF_ASSIGN_OR_RETURN(uint64_t raw_size, c.u64("KALLSYMS raw_size"));
  if (version != kVersionText) {
    return make_error_at(Errc::kUnsupported, base_offset,
                         "KALLSYMS version " + std::to_string(version) + " (we read 1 and 2)");
  }
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
    return std::string(reinterpret_cast<const char*>(body.data()), body.size());
  }
  if (compression != kZstd) {
    return make_error_at(Errc::kUnsupported, base_offset + 4,
                         "KALLSYMS compression " + std::to_string(compression));
  }
  std::unique_ptr<ZSTD_DCtx, DCtxFree> ctx(ZSTD_createDCtx());
  if (!ctx) return make_error(Errc::kInternal, "ZSTD_createDCtx failed");
  // Streamed through a fixed buffer into a string that grows with the real
  // output (no zero-filling, geometric growth), so a lying raw_size costs
  // nothing and extra output is caught one chunk past it.
  std::string out;
  out.reserve(static_cast<size_t>(std::min<uint64_t>(raw_size, 64ull << 20)));
  std::vector<char> buf(std::min<uint64_t>(raw_size, 1 << 20) + 1);  // +1: output beyond raw_size
  ZSTD_inBuffer in{body.data(), body.size(), 0};
  size_t ret = 1;
  while (in.pos < in.size || ret != 0) {
    ZSTD_outBuffer o{buf.data(), buf.size(), 0};
    ret = ZSTD_decompressStream(ctx.get(), &o, &in);
    if (ZSTD_isError(ret)) {
      return make_error_at(Errc::kBadRecord, body_at,
                           std::string("KALLSYMS zstd: ") + ZSTD_getErrorName(ret));
    }
    if (o.pos > raw_size - out.size()) {
      return make_error_at(Errc::kBadRecord, body_at,
                           "KALLSYMS decompresses beyond raw_size " + std::to_string(raw_size));
    }
    out.append(buf.data(), o.pos);
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

}  // namespace

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
    BPFPROF_ASSIGN_OR_RETURN(std::string text, decode_text(blob, base_offset));
    return from_text(text);
  }
  if (version != kVersionTable) {
    return make_error_at(Errc::kUnsupported, base_offset,
                         "KALLSYMS version " + std::to_string(version) + " (we read 1 and 2)");
  }
  KallsymsTable t;
  BPFPROF_TRY(t.check(blob, base_offset));
  return t;
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
