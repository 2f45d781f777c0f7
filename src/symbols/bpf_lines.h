// SPDX-License-Identifier: Apache-2.0
// BPF source lines from what the recorder stored: BPF_PROG_INFO's line_info
// (insn_off, file_name_off, line_off, line_col) with jited_line_info (the JIT
// address of each entry), and the program's BTF (BPF_BTF) whose string
// section holds the file names and the source text. Tables are built lazily,
// once per program, since most programs are never annotated.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bpf/owned_btf.h"
#include "perfdata/features.h"
#include "symbols/symbolizer.h"

namespace bpfprof::symbols {

class BpfLines {
 public:
  explicit BpfLines(const perfdata::Features& features);
  BpfLines(const BpfLines&) = delete;
  BpfLines& operator=(const BpfLines&) = delete;

  // End of pass 1: the programs lines are asked for (must outlive this).
  void set_programs(const std::vector<BpfProgram>& programs);
  // Thread-safe. Null without info, line info or BTF, or outside the function.
  std::optional<SourceLine> find(uint32_t program, uint32_t function, uint64_t ip) const;

 private:
  struct Line {
    uint64_t addr = 0;
    std::string_view file, text;
    uint32_t line = 0;
  };
  struct ProgramLines {
    std::once_flag once;
    std::vector<Line> lines;  // sorted by addr
  };
  struct Btf {
    const bpf::BtfBlob* blob = nullptr;
    std::once_flag once;
    bpf::OwnedBtf parsed;  // null: none or unparsable
  };
  const struct btf* btf_for(uint32_t btf_id) const;
  void build(const BpfProgram& prog, std::vector<Line>& out) const;

  const std::vector<BpfProgram>* programs_ = nullptr;
  std::vector<std::unique_ptr<ProgramLines>> lines_;
  std::unordered_map<uint32_t, std::unique_ptr<Btf>> btfs_;  // by BTF id
};

}  // namespace bpfprof::symbols
