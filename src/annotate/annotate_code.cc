// SPDX-License-Identifier: Apache-2.0
// The code side of annotate: a program's stored JIT image cut into functions,
// disassembled, and grouped under source lines (jited_line_info gives the JIT
// address of each line_info entry; the entry names the file and the line's
// text by offsets into the BTF string section).
#include <fmt/format.h>
#include <linux/btf.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>
#include <numeric>
#include <utility>

#include "annotate/annotate.h"
#include "base/text_lines.h"
#include "bpf/map_loads.h"

namespace bpfprof::annotate {
namespace {

// The string section of a raw BTF blob, as the kernel returned it. Empty if
// the header is not one we can read (then the program has no lines).
std::string_view btf_strings(const bpf::BtfBlob& blob) {
  btf_header h;
  if (blob.data.size() < sizeof h) return {};
  std::memcpy(&h, blob.data.data(), sizeof h);
  if (h.magic != BTF_MAGIC || h.hdr_len < sizeof h) return {};
  const uint64_t start = uint64_t{h.hdr_len} + h.str_off, end = start + h.str_len;
  if (end > blob.data.size()) return {};
  return {reinterpret_cast<const char*>(blob.data.data()) + start, h.str_len};
}

// The NUL-terminated string at `off`; "" when it runs off the section.
std::string_view string_at(std::string_view strings, uint32_t off) {
  if (off >= strings.size()) return {};
  const size_t end = strings.find('\0', off);
  if (end == std::string_view::npos) return {};
  return strings.substr(off, end - off);
}

struct LineRef {
  uint32_t offset;  // from the function's start
  uint32_t line;
  std::string_view file, text;
};

// Per function, the line entries that fall inside it, sorted by offset. At
// equal addresses the later line_info entry wins, as in symbols::BpfLines,
// so annotate's lines agree with `report --sort line`.
std::vector<std::vector<LineRef>> line_tables(const bpf::ProgInfo& info, const bpf::BtfBlob* btf,
                                              std::span<const uint32_t> lens) {
  std::vector<std::vector<LineRef>> out(lens.size());
  const uint32_t rec = info.info.line_info_rec_size;
  if (btf == nullptr || rec < sizeof(bpf_line_info) || info.jited_ksyms.size() != lens.size()) {
    return out;
  }
  const std::string_view strings = btf_strings(*btf);
  if (strings.empty()) return out;
  const size_t n = std::min(info.line_info.size() / rec, info.jited_line_info.size());
  for (size_t i = 0; i < n; ++i) {
    bpf_line_info li;
    std::memcpy(&li, info.line_info.data() + i * rec, sizeof li);
    const uint64_t addr = info.jited_line_info[i];
    for (size_t k = 0; k < lens.size(); ++k) {
      const uint64_t start = info.jited_ksyms[k];
      if (addr < start || addr - start >= lens[k]) continue;
      out[k].push_back(LineRef{static_cast<uint32_t>(addr - start),
                               BPF_LINE_INFO_LINE_NUM(li.line_col),
                               string_at(strings, li.file_name_off),
                               string_at(strings, li.line_off)});
      break;
    }
  }
  for (auto& t : out) {
    std::stable_sort(t.begin(), t.end(),
                     [](const LineRef& a, const LineRef& b) { return a.offset < b.offset; });
  }
  return out;
}

// The line an instruction at `offset` belongs to: the last entry at or
// before it (instructions between two entries belong to the earlier one).
const LineRef* line_of(const std::vector<LineRef>& table, uint32_t offset) {
  auto it = std::upper_bound(table.begin(), table.end(), offset,
                             [](uint32_t o, const LineRef& l) { return o < l.offset; });
  return it == table.begin() ? nullptr : &*std::prev(it);
}

}  // namespace

Result<std::vector<AnnotatedFunction>> build_functions(const bpf::ProgInfo& info,
                                                      const bpf::BtfBlob* btf, Arch arch) {
  std::vector<uint32_t> lens = info.jited_func_lens;
  // An image without function lengths is one function.
  if (lens.empty()) lens.push_back(static_cast<uint32_t>(info.jited_insns.size()));
  const uint64_t total = std::accumulate(lens.begin(), lens.end(), uint64_t{0});
  if (total > info.jited_insns.size()) {
    return make_error(Errc::kBadRecord,
                      fmt::format("BPF_PROG_INFO of program id {}: function lengths add up to {} "
                                  "bytes, the stored JIT image has {}",
                                  info.id(), total, info.jited_insns.size()));
  }
  const auto tables = line_tables(info, btf, lens);
  std::vector<AnnotatedFunction> out;
  size_t pos = 0;
  for (size_t k = 0; k < lens.size(); ++k) {
    AnnotatedFunction f;
    f.name = k < info.ksym_names.size() && !info.ksym_names[k].empty()
                 ? info.ksym_names[k]
                 : fmt::format("{}[{}]", info.name(), k);
    f.len = lens[k];
    const uint64_t address = k < info.jited_ksyms.size() ? info.jited_ksyms[k] : 0;
    auto insns = disassemble(arch, std::span(info.jited_insns).subspan(pos, lens[k]), address);
    if (!insns.ok()) return std::move(insns).error();
    pos += lens[k];
    const LineRef* current = nullptr;
    for (Insn& insn : *insns) {
      const LineRef* l = line_of(tables[k], insn.offset);
      const bool same = !f.blocks.empty() &&
                        (l == current || (l && current && l->line == current->line &&
                                          l->file == current->file));
      if (!same) {
        LineBlock b;
        if (l) {
          b.line = l->line;
          b.file = l->file;
          b.text = l->text;
        }
        f.blocks.push_back(std::move(b));
      }
      current = l;
      f.blocks.back().insns.push_back(AnnotatedInsn{insn.offset, insn.size, std::move(insn.text), 0});
    }
    out.push_back(std::move(f));
  }
  return out;
}

bool add_samples(AnnotatedFunction& f, uint32_t offset, uint64_t n) {
  if (offset >= f.len || f.blocks.empty()) return false;
  auto block = std::upper_bound(f.blocks.begin(), f.blocks.end(), offset,
                                [](uint32_t o, const LineBlock& b) { return o < b.insns.front().offset; });
  if (block == f.blocks.begin()) return false;
  auto& insns = std::prev(block)->insns;
  auto insn = std::upper_bound(insns.begin(), insns.end(), offset,
                               [](uint32_t o, const AnnotatedInsn& i) { return o < i.offset; });
  std::prev(insn)->samples += n;
  return true;
}

bool add_callee_samples(AnnotatedFunction& f, uint32_t offset, uint64_t n) {
  if (offset == 0 || offset > f.len) return false;
  for (LineBlock& b : f.blocks) {
    if (b.insns.empty() || b.insns.front().offset >= offset) continue;
    for (AnnotatedInsn& i : b.insns) {
      if (i.offset + i.size == offset && call_target(i.text)) {
        i.callee_samples += n;
        return true;
      }
    }
  }
  return false;
}

std::optional<uint64_t> call_target(std::string_view text) {
  if (text.starts_with("call 0x")) return parse_hex(text.substr(7));
  if (text.starts_with("bl #0x")) return parse_hex(text.substr(6));
  return std::nullopt;
}

std::optional<uint64_t> imm64_operand(std::string_view text) {
  if (std::optional<bpf::Movabs> m = bpf::parse_movabs(text)) return m->value;
  return std::nullopt;
}

namespace {

// "x5" or "x12" -> 5 / 12; nullopt for any other register ("w1", "sp", "xzr").
std::optional<unsigned> x_register(std::string_view r) {
  if (r.size() < 2 || r.size() > 3 || r[0] != 'x') return std::nullopt;
  unsigned n = 0;
  for (char c : r.substr(1)) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<unsigned>(c - '0');
  }
  return n <= 30 ? std::optional<unsigned>(n) : std::nullopt;
}

// "#0x1234" or "#-0x1235" or "#12" -> its value as 64 bits.
std::optional<uint64_t> arm64_imm(std::string_view s) {
  if (!s.starts_with('#')) return std::nullopt;
  s.remove_prefix(1);
  const bool negative = s.starts_with('-');
  if (negative) s.remove_prefix(1);
  std::optional<uint64_t> v;
  if (s.starts_with("0x")) {
    v = parse_hex(s.substr(2));
  } else {
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec == std::errc() && end == s.data() + s.size()) v = n;
  }
  if (!v) return std::nullopt;
  return negative ? uint64_t{0} - *v : *v;
}

// One step of building an immediate in an x register.
struct Arm64Move {
  unsigned reg;
  bool keep;       // movk: replaces 16 bits, keeps the rest
  uint64_t value;  // mov: the whole value; movk: the 16 bits
  unsigned shift;  // movk: where they go
};

// `mov xN, #imm` (capstone's alias for movz and movn, the value whole),
// `movz`/`movn xN, #imm16, lsl #S`, `movk xN, #imm16[, lsl #S]`.
std::optional<Arm64Move> arm64_move(std::string_view text) {
  const size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const std::string_view op = text.substr(0, space);
  if (op != "mov" && op != "movz" && op != "movn" && op != "movk") return std::nullopt;
  std::string_view rest = text.substr(space + 1);
  std::string_view parts[3];
  size_t n = 0;
  while (n < 3) {
    const size_t comma = rest.find(", ");
    parts[n++] = rest.substr(0, comma);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 2);
  }
  if (n < 2 || (n == 3 && rest.find(", ") != std::string_view::npos)) return std::nullopt;
  const std::optional<unsigned> reg = x_register(parts[0]);
  const std::optional<uint64_t> imm = arm64_imm(parts[1]);
  if (!reg || !imm) return std::nullopt;
  unsigned shift = 0;
  if (n == 3) {
    if (!parts[2].starts_with("lsl #")) return std::nullopt;
    const std::optional<uint64_t> s = arm64_imm(parts[2].substr(4));
    if (!s || (*s != 0 && *s != 16 && *s != 32 && *s != 48)) return std::nullopt;
    shift = static_cast<unsigned>(*s);
  }
  if (op == "mov") {
    if (n == 3) return std::nullopt;
    return Arm64Move{*reg, false, *imm, 0};
  }
  if (*imm > 0xffff) return std::nullopt;
  if (op == "movz") return Arm64Move{*reg, false, *imm << shift, 0};
  if (op == "movn") return Arm64Move{*reg, false, ~(*imm << shift), 0};
  return Arm64Move{*reg, true, *imm, shift};
}

}  // namespace

std::vector<std::pair<size_t, uint64_t>> arm64_imm64_loads(std::span<const std::string> texts) {
  std::vector<std::pair<size_t, uint64_t>> out;
  std::optional<Arm64Move> open;  // the sequence being built: reg and value so far
  size_t last = 0;
  for (size_t i = 0; i <= texts.size(); ++i) {
    const std::optional<Arm64Move> m = i < texts.size() ? arm64_move(texts[i]) : std::nullopt;
    if (m && m->keep && open && m->reg == open->reg) {
      const uint64_t mask = uint64_t{0xffff} << m->shift;
      open->value = (open->value & ~mask) | (m->value << m->shift);
      last = i;
      continue;
    }
    if (open) out.emplace_back(last, open->value);
    open.reset();
    if (m && !m->keep) {
      open = m;
      last = i;
    }
  }
  return out;
}

std::string map_at(const std::vector<bpf::MapInfo>& maps, uint64_t addr) {
  if (addr == 0) return "";
  for (const bpf::MapInfo& m : maps) {
    if (m.addr == addr) return fmt::format("map[id:{} {}]", m.id, m.name);
  }
  for (const bpf::MapInfo& m : maps) {
    // The kernel rounds an array's elements up to 8 bytes.
    const uint64_t size = (uint64_t{m.value_size} + 7) / 8 * 8 * m.max_entries;
    if (m.value_addr != 0 && addr >= m.value_addr && addr - m.value_addr < size) {
      const uint64_t off = addr - m.value_addr;
      return off ? fmt::format("map[id:{} {}]+{:#x}", m.id, m.name, off)
                 : fmt::format("map[id:{} {}]", m.id, m.name);
    }
  }
  return "";
}

void finish_counts(AnnotatedFunction& f) {
  f.samples = 0;
  f.callee_samples = 0;
  std::map<std::pair<std::string, std::optional<uint32_t>>, uint64_t> totals;
  for (LineBlock& b : f.blocks) {
    b.samples = 0;
    for (const AnnotatedInsn& i : b.insns) {
      b.samples += i.samples;
      f.callee_samples += i.callee_samples;
    }
    f.samples += b.samples;
    totals[{b.file, b.line}] += b.samples;
  }
  f.line_totals.clear();
  for (const auto& [key, samples] : totals) f.line_totals.push_back({key.second, key.first, samples});
  std::stable_sort(f.line_totals.begin(), f.line_totals.end(),
                   [](const LineTotal& a, const LineTotal& b) { return a.samples > b.samples; });
}

}  // namespace bpfprof::annotate
