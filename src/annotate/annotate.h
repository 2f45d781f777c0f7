// SPDX-License-Identifier: Apache-2.0
// `bpfprof annotate`: one BPF program's JIT'd code, function by function,
// instruction by instruction, under the source lines it came from, with the
// samples whose leaf frame fell on each instruction. Everything comes from
// the recording: the JIT image, function lengths, line info and jited line
// info from BPF_PROG_INFO, the source text from BPF_BTF, the instances and
// their addresses from KSYMBOL/BPF_EVENT. Renderers: annotate_render.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/session.h"
#include "base/error.h"
#include "bpf/disasm.h"
#include "bpf/prog_info.h"

namespace bpfprof::annotate {

// The disassembler lives in bpf/ (the recorder uses it too).
using bpf::Arch;
using bpf::arch_from_name;
using bpf::disassemble;
using bpf::Insn;

// How the program was named on the command line. An id means one instance
// (one load); a name, ksym or tag means every instance of that code (the same
// program loaded many times): samples of all of them are added up, each at
// its offset from its own function's start.
enum class SelectedBy : uint8_t { kId, kTag, kKsym, kName };
std::string_view selected_by_name(SelectedBy by);

struct AnnotatedInsn {
  uint32_t offset = 0;  // from the function's start
  uint32_t size = 0;
  std::string text;     // capstone's "mnemonic operands"
  uint64_t samples = 0;
  // A direct call's target as the recording names it at the program's load
  // (helper, kfunc, subprogram: "bpf_map_update_elem"), or the map whose
  // kernel address a 64-bit immediate load loads ("map[id:14 counts]",
  // "map[id:15 prog.bss]+0x8" in an array map's values); "" otherwise.
  std::string target;
  // Samples charged to the program as its callees (docs/cost.md) whose
  // innermost program frame returns to the instruction after this call.
  uint64_t callee_samples = 0;
};

// A run of consecutive instructions from the same source line. A line the
// compiler spread over the function appears in several blocks; its total is
// in AnnotatedFunction::line_totals.
struct LineBlock {
  std::optional<uint32_t> line;  // none: before the function's first line info, or no BTF
  std::string file, text;
  uint64_t samples = 0;
  std::vector<AnnotatedInsn> insns;
};

struct LineTotal {
  std::optional<uint32_t> line;
  std::string file;
  uint64_t samples = 0;
};

struct AnnotatedFunction {
  std::string name;  // ksym name
  uint32_t len = 0;  // JIT'd length: the instructions' sizes add up to it
  uint64_t samples = 0;
  uint64_t callee_samples = 0;
  std::vector<LineBlock> blocks;         // in address order
  std::vector<LineTotal> line_totals;    // by samples, descending; ties by line
};

// One program's code (one tag) and the samples of the selected instances.
struct Listing {
  std::string name, tag;
  std::vector<uint32_t> ids;   // the instances whose samples are counted, in load order
  uint32_t code_id = 0;        // the instance whose stored info is disassembled
  uint64_t samples = 0;        // leaf samples in the selected instances
  uint64_t samples_outside = 0;  // of those, at offsets the stored code does not cover
  uint64_t callee_samples = 0;   // the selected instances' callees (docs/cost.md)
  // Of those, the ones no call instruction is counted for: the program's
  // frame is no call's return address (an interrupt taken inside the
  // program), or the stored code does not cover it.
  uint64_t callee_samples_not_at_call = 0;
  bool has_lines = false;      // line info and BTF were stored
  std::string unavailable;     // why there is no code to show ("" = functions are filled)
  std::vector<AnnotatedFunction> functions;  // main function first
};

struct Annotation {
  std::string query;
  SelectedBy selected_by = SelectedBy::kName;
  std::string arch;            // the recording's ARCH feature
  uint64_t total_samples = 0;  // every sample of the recording
  std::vector<Listing> listings;  // one per distinct code the query matched
};

// Errors: kNotFound when nothing matches (the message lists the closest
// names), kUnsupported for an architecture we cannot disassemble.
Result<Annotation> annotate(const analysis::Session& session, std::string_view query);

// --- building blocks, exposed for tests ---

// The functions of `info` with instructions and source lines, no samples yet.
// `btf` may be null (no lines then). Errors: the stored arrays contradict each
// other (function lengths beyond the image), a corrupt section.
Result<std::vector<AnnotatedFunction>> build_functions(const bpf::ProgInfo& info,
                                                      const bpf::BtfBlob* btf, Arch arch);
// Counts `n` samples on the instruction covering `offset` of function `f`;
// false if the offset is past the function's end.
bool add_samples(AnnotatedFunction& f, uint32_t offset, uint64_t n);
// Counts `n` callee samples on the call instruction that ends just before
// `offset` (a return address) of function `f`; false if there is none.
bool add_callee_samples(AnnotatedFunction& f, uint32_t offset, uint64_t n);
// The absolute target of a direct call ("call 0xffffffff81523bd0",
// "bl #0xffff800080123456"), if `text` is one.
std::optional<uint64_t> call_target(std::string_view text);
// The immediate of a 64-bit immediate load ("movabs rdi, 0xffff888102f4c000"),
// if `text` is one.
std::optional<uint64_t> imm64_operand(std::string_view text);
// arm64 code builds a 64-bit immediate in an x register: `mov xN, #imm`
// (capstone's name for movz and movn, printing the value they give), then
// up to three `movk xN, #imm16, lsl #16/32/48` each replacing 16 bits. For
// each such sequence in `texts` (one function's instructions in order): the
// index of its last instruction and the value it leaves in the register.
std::vector<std::pair<size_t, uint64_t>> arm64_imm64_loads(std::span<const std::string> texts);
// The map at `addr` among `maps`: "map[id:N name]" for its struct bpf_map,
// "map[id:N name]+0xOFF" inside an array map's values; "" for none.
std::string map_at(const std::vector<bpf::MapInfo>& maps, uint64_t addr);
// Fills block and function samples and line totals from instruction samples.
void finish_counts(AnnotatedFunction& f);

// Up to `max` candidates closest to `query` by edit distance (candidates that
// contain the query first), without repeats.
std::vector<std::string> closest_names(std::string_view query,
                                       std::span<const std::string> candidates, size_t max);

// Renderers. `color`: ANSI colour/bold for hot lines and instructions (only
// when stdout is a terminal).
std::string render_annotate_text(const Annotation& a, bool color);
std::string render_annotate_json(const Annotation& a);

}  // namespace bpfprof::annotate
