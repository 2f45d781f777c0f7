// SPDX-License-Identifier: Apache-2.0
// BPF_PROG_INFO (25) and BPF_BTF (26) feature sections, byte-compatible with
// perf's `struct perf_bpil` (tools/perf/util/bpf-utils.c): per program u32
// info_len, u32 data_len, u64 arrays, bpf_prog_info with array pointer fields
// holding offsets into data[], then data[] (arrays in PERF_BPIL bit order,
// each padded to 8). perf-data-format.md section 8.6.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <optional>
#include <set>
#include <string>

#include "perfdata/features.h"

namespace bpfprof::perfdata {
namespace {

// sizeof(struct bpf_prog_info) in the 6.1 uapi headers: what perf 6.1 writes
// and the largest info_len it accepts.
constexpr uint32_t kInfoLen = 232;
static_assert(sizeof(bpf_prog_info) == kInfoLen, "bpf_prog_info layout changed");

// One variable array of bpf_prog_info, by PERF_BPIL bit number.
struct ArrayField {
  int bit;
  size_t ptr_off;       // __aligned_u64 pointer (offset into data[] on disk)
  size_t count_off;     // u32 element count
  uint32_t elem_size;   // fixed element size, or 0: read from rec_size_off
  size_t rec_size_off;
};

constexpr int kBpilJitedInsns = 0, kBpilXlatedInsns = 1, kBpilMapIds = 2, kBpilJitedKsyms = 3,
              kBpilFuncLens = 4, kBpilFuncInfo = 5, kBpilLineInfo = 6, kBpilJitedLineInfo = 7,
              kBpilProgTags = 8;

#define BPFPROF_OFF(f) offsetof(bpf_prog_info, f)
constexpr ArrayField kArrays[] = {
    {kBpilJitedInsns, BPFPROF_OFF(jited_prog_insns), BPFPROF_OFF(jited_prog_len), 1, 0},
    {kBpilXlatedInsns, BPFPROF_OFF(xlated_prog_insns), BPFPROF_OFF(xlated_prog_len), 1, 0},
    {kBpilMapIds, BPFPROF_OFF(map_ids), BPFPROF_OFF(nr_map_ids), 4, 0},
    {kBpilJitedKsyms, BPFPROF_OFF(jited_ksyms), BPFPROF_OFF(nr_jited_ksyms), 8, 0},
    {kBpilFuncLens, BPFPROF_OFF(jited_func_lens), BPFPROF_OFF(nr_jited_func_lens), 4, 0},
    {kBpilFuncInfo, BPFPROF_OFF(func_info), BPFPROF_OFF(nr_func_info), 0,
     BPFPROF_OFF(func_info_rec_size)},
    {kBpilLineInfo, BPFPROF_OFF(line_info), BPFPROF_OFF(nr_line_info), 0,
     BPFPROF_OFF(line_info_rec_size)},
    {kBpilJitedLineInfo, BPFPROF_OFF(jited_line_info), BPFPROF_OFF(nr_jited_line_info), 0,
     BPFPROF_OFF(jited_line_info_rec_size)},
    {kBpilProgTags, BPFPROF_OFF(prog_tags), BPFPROF_OFF(nr_prog_tags), 8, 0},
};
#undef BPFPROF_OFF
// The documented table (shared notes) must match the header we compile with.
static_assert(offsetof(bpf_prog_info, jited_ksyms) == 112);
static_assert(offsetof(bpf_prog_info, line_info_rec_size) == 172);
static_assert(offsetof(bpf_prog_info, prog_tags) == 184);

template <class T>
T get_field(const bpf_prog_info& info, size_t off) {
  return load_unaligned<T>(reinterpret_cast<const std::byte*>(&info) + off);
}
template <class T>
void set_field(bpf_prog_info& info, size_t off, T v) {
  std::memcpy(reinterpret_cast<std::byte*>(&info) + off, &v, sizeof v);
}

size_t pad8(size_t n) { return (n + 7) & ~size_t{7}; }

template <class T>
Bytes bytes_of(const std::vector<T>& v) {
  return as_bytes_of(v.data(), v.size() * sizeof(T));
}

void encode_one(std::vector<std::byte>& out, const bpf::ProgInfo& p) {
  bpf_prog_info info = p.info;
  for (const ArrayField& a : kArrays) set_field<uint64_t>(info, a.ptr_off, 0);
  if (info.func_info_rec_size == 0) info.func_info_rec_size = sizeof(bpf_func_info);
  if (info.line_info_rec_size == 0) info.line_info_rec_size = sizeof(bpf_line_info);
  info.jited_line_info_rec_size = sizeof(uint64_t);

  // What we store per PERF_BPIL bit and its element count.
  struct Stored {
    int bit;
    Bytes bytes;
    uint32_t count;
  };
  const size_t nr_func = p.func_info.size() / info.func_info_rec_size;
  const size_t nr_line = p.line_info.size() / info.line_info_rec_size;
  const Stored stored[] = {
      {kBpilJitedInsns, bytes_of(p.jited_insns), static_cast<uint32_t>(p.jited_insns.size())},
      {kBpilJitedKsyms, bytes_of(p.jited_ksyms), static_cast<uint32_t>(p.jited_ksyms.size())},
      {kBpilFuncLens, bytes_of(p.jited_func_lens), static_cast<uint32_t>(p.jited_func_lens.size())},
      {kBpilFuncInfo, bytes_of(p.func_info).first(nr_func * info.func_info_rec_size),
       static_cast<uint32_t>(nr_func)},
      {kBpilLineInfo, bytes_of(p.line_info).first(nr_line * info.line_info_rec_size),
       static_cast<uint32_t>(nr_line)},
      {kBpilJitedLineInfo, bytes_of(p.jited_line_info),
       static_cast<uint32_t>(p.jited_line_info.size())},
      {kBpilProgTags, bytes_of(p.prog_tags), static_cast<uint32_t>(p.prog_tags.size())},
  };
  uint64_t arrays = 0;
  std::vector<std::byte> data;
  for (const Stored& s : stored) {
    const ArrayField& a = kArrays[s.bit];
    set_field<uint32_t>(info, a.count_off, s.count);
    if (s.count == 0) continue;
    arrays |= 1ull << s.bit;
    set_field<uint64_t>(info, a.ptr_off, data.size());
    data.insert(data.end(), s.bytes.begin(), s.bytes.end());
    data.resize(pad8(data.size()));
  }
  append_pod(out, kInfoLen);
  append_pod(out, static_cast<uint32_t>(data.size()));
  append_pod(out, arrays);
  append_pod(out, info);
  out.insert(out.end(), data.begin(), data.end());
}

// Copies `n` elements of T out of possibly unaligned bytes.
template <class T>
std::vector<T> copy_array(Bytes b, size_t n, size_t stride) {
  std::vector<T> out(n);
  for (size_t i = 0; i < n; ++i) std::memcpy(&out[i], b.data() + i * stride, sizeof(T));
  return out;
}

Result<bpf::ProgInfo> decode_one(ByteCursor& c, uint32_t index) {
  const uint64_t entry_at = c.absolute_pos();
  auto bad = [&](uint64_t at, const std::string& what) {
    return make_error_at(Errc::kBadRecord, at,
                         "BPF_PROG_INFO entry " + std::to_string(index) + ": " + what);
  };
  BPFPROF_ASSIGN_OR_RETURN(uint32_t info_len, c.u32("BPF_PROG_INFO info_len"));
  BPFPROF_ASSIGN_OR_RETURN(uint32_t data_len, c.u32("BPF_PROG_INFO data_len"));
  BPFPROF_ASSIGN_OR_RETURN(uint64_t arrays, c.u64("BPF_PROG_INFO arrays"));
  BPFPROF_ASSIGN_OR_RETURN(Bytes info_bytes, c.bytes(info_len, "BPF_PROG_INFO info"));
  const uint64_t data_at = c.absolute_pos();
  BPFPROF_ASSIGN_OR_RETURN(Bytes data, c.bytes(data_len, "BPF_PROG_INFO data"));

  // A writer with an older or newer bpf_prog_info: copy what both know, the
  // rest stays zero (libbpf's sz convention).
  bpf::ProgInfo p;
  std::memcpy(&p.info, info_bytes.data(), std::min<size_t>(info_len, sizeof p.info));

  Bytes slices[std::size(kArrays)];
  uint32_t counts[std::size(kArrays)] = {};
  uint32_t strides[std::size(kArrays)] = {};
  for (const ArrayField& a : kArrays) {
    if (!((arrays >> a.bit) & 1)) continue;
    uint32_t count = get_field<uint32_t>(p.info, a.count_off);
    uint32_t elem = a.elem_size ? a.elem_size : get_field<uint32_t>(p.info, a.rec_size_off);
    if (count == 0) continue;
    if (elem == 0) return bad(entry_at, "array " + std::to_string(a.bit) + " has rec_size 0");
    uint64_t size = uint64_t{count} * elem;  // u32 x u32 cannot overflow u64
    uint64_t off = get_field<uint64_t>(p.info, a.ptr_off);
    if (off > data_len || size > data_len - off) {
      return bad(data_at, "array " + std::to_string(a.bit) + " (" + std::to_string(count) +
                              " x " + std::to_string(elem) + " bytes at offset " +
                              std::to_string(off) + ") exceeds data_len " +
                              std::to_string(data_len));
    }
    slices[a.bit] = data.subspan(off, size);
    counts[a.bit] = count;
    strides[a.bit] = elem;
  }
  if (counts[kBpilJitedLineInfo] && strides[kBpilJitedLineInfo] < sizeof(uint64_t))
    return bad(entry_at, "jited_line_info_rec_size below 8");
  if (counts[kBpilFuncLens] && counts[kBpilJitedKsyms] &&
      counts[kBpilFuncLens] != counts[kBpilJitedKsyms])
    return bad(entry_at, "nr_jited_func_lens differs from nr_jited_ksyms");

  const Bytes insns = slices[kBpilJitedInsns];
  p.jited_insns.resize(insns.size());
  if (!insns.empty()) std::memcpy(p.jited_insns.data(), insns.data(), insns.size());
  p.jited_ksyms = copy_array<uint64_t>(slices[kBpilJitedKsyms], counts[kBpilJitedKsyms], 8);
  p.jited_func_lens = copy_array<uint32_t>(slices[kBpilFuncLens], counts[kBpilFuncLens], 4);
  p.func_info.assign(slices[kBpilFuncInfo].begin(), slices[kBpilFuncInfo].end());
  p.line_info.assign(slices[kBpilLineInfo].begin(), slices[kBpilLineInfo].end());
  p.jited_line_info = copy_array<uint64_t>(slices[kBpilJitedLineInfo],
                                           counts[kBpilJitedLineInfo], strides[kBpilJitedLineInfo]);
  p.prog_tags = copy_array<bpf::Tag>(slices[kBpilProgTags], counts[kBpilProgTags], 8);

  // ProgInfo's contract: pointer fields 0, counts describe the vectors.
  for (const ArrayField& a : kArrays) {
    set_field<uint64_t>(p.info, a.ptr_off, 0);
    if (a.bit == kBpilXlatedInsns || a.bit == kBpilMapIds) continue;  // scalars kept
    set_field<uint32_t>(p.info, a.count_off, counts[a.bit]);
  }
  p.info.jited_prog_len = static_cast<uint32_t>(p.jited_insns.size());
  if (!p.jited_line_info.empty()) p.info.jited_line_info_rec_size = sizeof(uint64_t);
  return p;
}

}  // namespace

std::vector<std::byte> encode_bpf_prog_info(const std::vector<bpf::ProgInfo>& progs) {
  std::vector<std::byte> out;
  append_pod(out, static_cast<uint32_t>(progs.size()));
  for (const bpf::ProgInfo& p : progs) encode_one(out, p);
  return out;
}

Result<std::vector<bpf::ProgInfo>> decode_bpf_prog_info(Bytes section, uint64_t base_offset) {
  ByteCursor c(section, base_offset);
  BPFPROF_ASSIGN_OR_RETURN(uint32_t count, c.u32("BPF_PROG_INFO count"));
  std::vector<bpf::ProgInfo> out;
  std::set<uint32_t> seen;
  for (uint32_t i = 0; i < count; ++i) {
    BPFPROF_ASSIGN_OR_RETURN(bpf::ProgInfo p, decode_one(c, i));
    // perf keys programs by id and drops duplicates; so do we.
    if (seen.insert(p.id()).second) out.push_back(std::move(p));
  }
  return out;
}

std::vector<std::byte> encode_bpf_btf(const std::vector<bpf::BtfBlob>& blobs) {
  std::vector<std::byte> out;
  append_pod(out, static_cast<uint32_t>(blobs.size()));
  for (const bpf::BtfBlob& b : blobs) {
    append_pod(out, b.id);
    append_pod(out, static_cast<uint32_t>(b.data.size()));
    out.insert(out.end(), b.data.begin(), b.data.end());
  }
  return out;
}

namespace {

// A blob that starts with the BTF magic must hold the sections its header
// declares (struct btf_header: u16 magic, u8 version, u8 flags, u32 hdr_len,
// u32 type_off, type_len, str_off, str_len; offsets after hdr_len).
std::optional<std::string> btf_contradiction(Bytes data) {
  constexpr uint16_t kBtfMagic = 0xeb9f;
  constexpr size_t kBtfHeaderSize = 24;
  if (data.size() < 2 || load_unaligned<uint16_t>(data.data()) != kBtfMagic) return std::nullopt;
  if (data.size() < kBtfHeaderSize) return "the BTF header needs 24 bytes";
  const uint64_t hdr_len = load_unaligned<uint32_t>(data.data() + 4);
  const uint64_t type_end = uint64_t{load_unaligned<uint32_t>(data.data() + 8)} +
                            load_unaligned<uint32_t>(data.data() + 12);
  const uint64_t str_end = uint64_t{load_unaligned<uint32_t>(data.data() + 16)} +
                           load_unaligned<uint32_t>(data.data() + 20);
  const uint64_t needed = hdr_len + std::max(type_end, str_end);
  if (hdr_len < kBtfHeaderSize || needed > data.size()) {
    return "its header declares " + std::to_string(needed) + " bytes";
  }
  return std::nullopt;
}

}  // namespace

Result<std::vector<bpf::BtfBlob>> decode_bpf_btf(Bytes section, uint64_t base_offset,
                                                 std::vector<Error>* bad_blobs) {
  ByteCursor c(section, base_offset);
  BPFPROF_ASSIGN_OR_RETURN(uint32_t count, c.u32("BPF_BTF count"));
  std::vector<bpf::BtfBlob> out;
  std::set<uint32_t> seen;
  for (uint32_t i = 0; i < count; ++i) {
    BPFPROF_ASSIGN_OR_RETURN(uint32_t id, c.u32("BPF_BTF id"));
    BPFPROF_ASSIGN_OR_RETURN(uint32_t size, c.u32("BPF_BTF data_size"));
    const uint64_t data_at = c.absolute_pos();
    BPFPROF_ASSIGN_OR_RETURN(Bytes data, c.bytes(size, "BPF_BTF data"));
    if (auto why = btf_contradiction(data)) {
      // Left out (a reader of it would trust the header); the others stay.
      if (bad_blobs) {
        bad_blobs->push_back(make_error_at(
            Errc::kBadRecord, data_at,
            "BPF_BTF blob of id " + std::to_string(id) + " has " + std::to_string(size) +
                " bytes but " + *why));
      }
      continue;
    }
    if (!seen.insert(id).second) continue;
    out.push_back(bpf::BtfBlob{id, std::vector<std::byte>(data.begin(), data.end())});
  }
  return out;
}

}  // namespace bpfprof::perfdata
