// SPDX-License-Identifier: Apache-2.0
#include "symbols/bpf_lines.h"

#include <bpf/btf.h>
#include <linux/bpf.h>

#include <algorithm>
#include <cstring>

namespace bpfprof::symbols {

BpfLines::BpfLines(const perfdata::Features& features) {
  for (const bpf::BtfBlob& b : features.bpf_btf) {
    auto& slot = btfs_[b.id];
    if (!slot) slot = std::make_unique<Btf>();
    slot->blob = &b;
  }
}

void BpfLines::set_programs(const std::vector<BpfProgram>& programs) {
  programs_ = &programs;
  lines_.clear();
  lines_.reserve(programs.size());
  for (size_t i = 0; i < programs.size(); ++i) lines_.push_back(std::make_unique<ProgramLines>());
}

const struct btf* BpfLines::btf_for(uint32_t btf_id) const {
  auto it = btfs_.find(btf_id);
  if (it == btfs_.end()) return nullptr;
  Btf& b = *it->second;
  std::call_once(b.once, [&b] { b.parsed = bpf::parse_btf(*b.blob); });
  return b.parsed.get();
}

void BpfLines::build(const BpfProgram& prog, std::vector<Line>& out) const {
  if (!prog.info) return;
  const bpf::ProgInfo& p = *prog.info;
  const uint32_t rec = p.info.line_info_rec_size;
  if (rec < sizeof(bpf_line_info) || p.jited_line_info.empty()) return;
  const struct btf* btf = btf_for(p.info.btf_id);
  if (!btf) return;
  const size_t n = std::min(p.line_info.size() / rec, p.jited_line_info.size());
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    bpf_line_info li;
    std::memcpy(&li, p.line_info.data() + i * rec, sizeof li);
    const char* file = btf__name_by_offset(btf, li.file_name_off);
    const char* text = btf__name_by_offset(btf, li.line_off);
    out.push_back(Line{p.jited_line_info[i], file ? file : "", text ? text : "",
                       BPF_LINE_INFO_LINE_NUM(li.line_col)});
  }
  std::stable_sort(out.begin(), out.end(), [](const Line& a, const Line& b) { return a.addr < b.addr; });
}

std::optional<SourceLine> BpfLines::find(uint32_t program, uint32_t function, uint64_t ip) const {
  if (!programs_ || program >= lines_.size()) return std::nullopt;
  const BpfProgram& prog = (*programs_)[program];
  if (function >= prog.functions.size()) return std::nullopt;
  ProgramLines& pl = *lines_[program];
  std::call_once(pl.once, [&] { build(prog, pl.lines); });
  const BpfFunction& fn = prog.functions[function];
  if (ip < fn.addr || (fn.len != 0 && ip - fn.addr >= fn.len)) return std::nullopt;
  auto it = std::upper_bound(pl.lines.begin(), pl.lines.end(), ip,
                             [](uint64_t a, const Line& l) { return a < l.addr; });
  if (it == pl.lines.begin()) return std::nullopt;
  const Line& l = *std::prev(it);
  if (l.addr < fn.addr) return std::nullopt;  // the nearest line belongs to another function
  return SourceLine{l.file, l.line, l.text};
}

}  // namespace bpfprof::symbols
