// SPDX-License-Identifier: Apache-2.0
// annotate: which instances the query selects, where their code comes from,
// and one walk over the samples that counts leaf IPs per instruction.
#include "annotate/annotate.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

#include <fmt/format.h>

#include "analysis/cost.h"
#include "analysis/sample_frames.h"
#include "report/render.h"

namespace bpfprof::annotate {
namespace {

using symbols::BpfProgram;

bool all_digits(std::string_view s) {
  return !s.empty() && s.size() <= 10 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool is_tag(std::string_view s) {
  return s.size() == 16 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isxdigit(c); });
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "bpf_prog_<16 hex>_<name>" -> "<name>": the full BTF name of the main
// function, which bpf_prog_info's 15-character name may have cut.
std::string_view ksym_suffix(std::string_view ksym) {
  constexpr std::string_view kPrefix = "bpf_prog_";
  if (!ksym.starts_with(kPrefix) || ksym.size() < kPrefix.size() + 18) return {};
  return ksym.substr(kPrefix.size() + 17);
}

bool name_matches(const BpfProgram& p, std::string_view q) {
  if (p.name == q) return true;
  if (p.info && p.info->name() == q) return true;
  return !p.functions.empty() && ksym_suffix(p.functions[0].ksym) == q;
}

// Indexes into the program list the query selects, and how it selected them.
std::pair<SelectedBy, std::vector<size_t>> select(const std::vector<BpfProgram>& progs,
                                                  std::string_view q) {
  std::vector<size_t> out;
  auto pick = [&](auto pred) {
    for (size_t i = 0; i < progs.size(); ++i) {
      if (pred(progs[i])) out.push_back(i);
    }
    return !out.empty();
  };
  if (all_digits(q) && pick([id = std::stoul(std::string(q))](const BpfProgram& p) {
        return p.id == id;
      })) {
    return {SelectedBy::kId, out};
  }
  if (is_tag(q) && pick([t = lower(q)](const BpfProgram& p) { return bpf::tag_hex(p.tag) == t; })) {
    return {SelectedBy::kTag, out};
  }
  if (pick([q](const BpfProgram& p) {
        return std::any_of(p.functions.begin(), p.functions.end(),
                           [q](const symbols::BpfFunction& f) { return f.ksym == q; });
      })) {
    return {SelectedBy::kKsym, out};
  }
  pick([q](const BpfProgram& p) { return name_matches(p, q); });
  return {SelectedBy::kName, out};
}

bool has_code(const BpfProgram& p) { return p.info && !p.info->jited_insns.empty(); }

// Why a listing has no code: from the file's own records and sections.
std::string why_no_code(const analysis::Session& s, const std::vector<BpfProgram>& progs,
                        const std::vector<size_t>& same_tag, const Listing& l) {
  for (size_t i : same_tag) {
    if (progs[i].info) {
      return fmt::format("the stored bpf_prog_info of {} (id {}) has no JIT image: the kernel "
                         "did not show it to the recorder (kernel.kptr_restrict / CAP_SYSLOG) or "
                         "the program is interpreted", l.name, progs[i].id);
    }
  }
  if (!s.reader().feature_errors().empty() && s.reader().features().bpf_prog_info.empty()) {
    return fmt::format("{} has no stored bpf_prog_info: the file's feature sections could not "
                       "be read ({})", l.name, s.reader().feature_errors().front().to_string());
  }
  const BpfProgram& p = progs[same_tag.front()];
  const uint64_t start = s.header().start_ns;
  if (p.unload_time) {
    return fmt::format("{} (id {}) has no stored bpf_prog_info: it was gone before enrichment "
                       "(loaded at {}, unloaded at {} s from the start, before the recorder read it)",
                       l.name, p.id, report::relative_time(p.load_time, start),
                       report::relative_time(*p.unload_time, start));
  }
  return fmt::format("{} (id {}) has no stored bpf_prog_info: the recording carries no "
                     "enrichment for it (not recorded by bpfprof record, or reading it failed)",
                     l.name, p.id);
}

// Each direct call's target, looked up in the recording at the program's
// load: its kallsyms snapshot (helpers, kfuncs) and the BPF functions alive
// then (subprograms). Never the live host.
void name_call_targets(const symbols::Symbolizer& sym, const BpfProgram& p,
                       std::vector<AnnotatedFunction>& functions) {
  for (AnnotatedFunction& f : functions) {
    for (LineBlock& b : f.blocks) {
      for (AnnotatedInsn& i : b.insns) {
        const std::optional<uint64_t> target = call_target(i.text);
        if (!target) continue;
        const symbols::Frame t = sym.lookup(0, *target, p.load_time, /*kernel=*/true);
        if (t.unknown != symbols::Unknown::kNone) continue;
        i.target = *target == t.symbol_start
                       ? std::string(t.symbol)
                       : fmt::format("{}+{:#x}", t.symbol, *target - t.symbol_start);
      }
    }
  }
}

// Each 64-bit immediate load of a map's address (a map reference: its
// struct bpf_map; direct value access: an array map's value) named after
// the map, from the maps the recording stored with the program: on x86-64
// the movabs, on arm64 the last instruction of the mov/movk sequence that
// builds it.
void name_map_loads(const bpf::ProgInfo& info, Arch arch,
                    std::vector<AnnotatedFunction>& functions) {
  if (!info.maps || info.maps->empty()) return;
  for (AnnotatedFunction& f : functions) {
    std::vector<AnnotatedInsn*> insns;
    for (LineBlock& b : f.blocks) {
      for (AnnotatedInsn& i : b.insns) insns.push_back(&i);
    }
    if (arch == Arch::kArm64) {
      std::vector<std::string> texts;
      texts.reserve(insns.size());
      for (const AnnotatedInsn* i : insns) texts.push_back(i->text);
      for (const auto& [last, value] : arm64_imm64_loads(texts)) {
        if (insns[last]->target.empty()) insns[last]->target = map_at(*info.maps, value);
      }
      continue;
    }
    for (AnnotatedInsn* i : insns) {
      if (!i->target.empty()) continue;
      if (const std::optional<uint64_t> imm = imm64_operand(i->text)) {
        i->target = map_at(*info.maps, *imm);
      }
    }
  }
}

// Does the sample's kernel callchain (not its leaf) hold an address in one of
// `ranges`? A cheap test before symbolizing a whole chain.
bool chain_enters(const perf::Sample& s, const std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
  for (size_t k = 0; k < s.callchain.size(); k++) {
    const uint64_t ip = s.callchain[k];
    if (ip == perf::kContextUser) break;  // BPF code is kernel code
    if (ip >= perf::kContextMax) continue;
    for (const auto& [lo, hi] : ranges) {
      if (ip > lo && ip <= hi) return true;  // a return address: after a call
    }
  }
  return false;
}

}  // namespace

std::string_view selected_by_name(SelectedBy by) {
  switch (by) {
    case SelectedBy::kId: return "id";
    case SelectedBy::kTag: return "tag";
    case SelectedBy::kKsym: return "ksym";
    case SelectedBy::kName: return "name";
  }
  return "?";
}

Result<Annotation> annotate(const analysis::Session& session, std::string_view query) {
  const symbols::Symbolizer& sym = session.symbolizer();
  const std::vector<BpfProgram>& progs = sym.bpf_programs();
  Annotation a;
  a.query = query;
  a.arch = session.header().arch;
  auto [by, selected] = select(progs, query);
  a.selected_by = by;
  if (selected.empty()) {
    std::vector<std::string> candidates;
    for (const BpfProgram& p : progs) {
      candidates.push_back(p.name);
      candidates.push_back(std::to_string(p.id));
      for (const symbols::BpfFunction& f : p.functions) candidates.push_back(f.ksym);
    }
    auto near = closest_names(query, candidates, 5);
    std::string msg = fmt::format("no BPF program named '{}' in the recording", query);
    if (!near.empty()) msg += fmt::format("; closest: {}", fmt::join(near, ", "));
    return make_error(Errc::kNotFound, std::move(msg));
  }

  // One listing per distinct code (tag), in the order instances were loaded.
  std::vector<int> listing_of(progs.size(), -1);
  std::vector<std::vector<int>> function_map(progs.size());
  std::unordered_map<std::string, size_t> by_tag;
  const std::optional<Arch> arch = arch_from_name(a.arch);
  for (size_t i : selected) {
    const std::string tag = bpf::tag_hex(progs[i].tag);
    auto [it, inserted] = by_tag.emplace(tag, a.listings.size());
    if (inserted) {
      Listing& l = a.listings.emplace_back();
      l.name = progs[i].name;
      l.tag = tag;
    }
    a.listings[it->second].ids.push_back(progs[i].id);
    listing_of[i] = static_cast<int>(it->second);
  }
  for (auto& [tag, li] : by_tag) {
    Listing& l = a.listings[li];
    // Code: a selected instance's own info first, else any instance of the
    // same code (a program gone before enrichment borrows its twin's image).
    std::vector<size_t> same_tag;
    for (size_t i = 0; i < progs.size(); ++i) {
      if (bpf::tag_hex(progs[i].tag) == tag) same_tag.push_back(i);
    }
    std::stable_partition(same_tag.begin(), same_tag.end(),
                          [&](size_t i) { return listing_of[i] == static_cast<int>(li); });
    auto code = std::find_if(same_tag.begin(), same_tag.end(),
                             [&](size_t i) { return has_code(progs[i]); });
    if (code == same_tag.end()) {
      l.unavailable = why_no_code(session, progs, same_tag, l);
      continue;
    }
    if (!arch) {
      return make_error(Errc::kUnsupported,
                        fmt::format("cannot disassemble the recording's architecture '{}' "
                                    "(x86_64 and aarch64 are supported)", a.arch));
    }
    const BpfProgram& src = progs[*code];
    l.code_id = src.id;
    const bpf::BtfBlob* btf = nullptr;
    for (const bpf::BtfBlob& b : session.reader().features().bpf_btf) {
      if (b.id == src.info->info.btf_id) btf = &b;
    }
    auto functions = build_functions(*src.info, btf, *arch);
    if (!functions.ok()) return std::move(functions).error();
    l.functions = std::move(functions).value();
    // The kernel's names for the functions are the KSYMBOL names; the stored
    // info may not carry them.
    if (src.functions.size() == l.functions.size()) {
      for (size_t k = 0; k < src.functions.size(); ++k) {
        if (!src.functions[k].ksym.empty()) l.functions[k].name = src.functions[k].ksym;
      }
    }
    name_call_targets(sym, src, l.functions);
    name_map_loads(*src.info, *arch, l.functions);
    l.has_lines = std::any_of(l.functions.begin(), l.functions.end(), [](const AnnotatedFunction& f) {
      return std::any_of(f.blocks.begin(), f.blocks.end(), [](const LineBlock& b) { return b.line.has_value(); });
    });
    // Instances' functions by ksym name (the same code names its functions
    // alike), else by position.
    for (size_t i : same_tag) {
      if (listing_of[i] != static_cast<int>(li)) continue;
      for (size_t j = 0; j < progs[i].functions.size(); ++j) {
        auto named = std::find_if(l.functions.begin(), l.functions.end(), [&](const AnnotatedFunction& f) {
          return f.name == progs[i].functions[j].ksym;
        });
        int k = named != l.functions.end() ? static_cast<int>(named - l.functions.begin())
                : j < l.functions.size()   ? static_cast<int>(j)
                                           : -1;
        function_map[i].push_back(k);
      }
    }
  }

  // Samples whose leaf frame is in a selected instance, looked up exactly as
  // `report` does (leaf ip, cpumode), so per-line totals agree with it; and
  // the selected instances' callees, charged as report charges them
  // (docs/cost.md), at the call their innermost program frame returns to.
  std::vector<analysis::SymbolizedFrame> frames, chain;
  const perfdata::FileReader& reader = session.reader();
  const analysis::CostModel cost(sym, reader.features());
  analysis::CostCache cost_cache;
  profile::Charge charge;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (size_t i = 0; i < progs.size(); ++i) {
    if (listing_of[i] < 0) continue;
    for (const symbols::BpfFunction& f : progs[i].functions) ranges.emplace_back(f.addr, f.addr + f.len);
  }
  auto count_callees = [&](const perf::Sample& sample, uint16_t cpumode) {
    if (sample.callchain.empty() || !chain_enters(sample, ranges)) return;
    analysis::symbolize_sample(sym, sample, cpumode, /*stack=*/true, chain);
    if (cost.classify(chain, analysis::chain_truncated(sample), sample.pid, sample.time,
                      cost_cache, charge, nullptr) != analysis::CostOutcome::kCharged ||
        charge.kind != profile::ChargeKind::kCallee) {
      return;
    }
    auto frame = std::find_if(chain.begin() + 1, chain.end(), [&](const analysis::SymbolizedFrame& sf) {
      return sf.frame.kind == symbols::FrameKind::kBpf && sf.frame.bpf_program == charge.programs.front();
    });
    if (frame == chain.end()) return;
    const size_t i = frame->frame.bpf_program - 1;
    if (i >= progs.size() || listing_of[i] < 0) return;
    Listing& l = a.listings[listing_of[i]];
    l.callee_samples++;
    const uint32_t fn = frame->frame.bpf_function;
    bool at_call = false;
    if (l.unavailable.empty() && fn < function_map[i].size() && function_map[i][fn] >= 0) {
      const uint64_t off = frame->ip - progs[i].functions[fn].addr;
      at_call = off <= UINT32_MAX &&
                add_callee_samples(l.functions[function_map[i][fn]], static_cast<uint32_t>(off), 1);
    }
    if (!at_call) l.callee_samples_not_at_call++;
  };
  // Through the session: it drops the pages behind the walk and reports progress.
  Status walked = session.for_each_record([&](const perf::RecordView& r, uint64_t) {
    if (r.header.type != perf::kRecordSample) return;
    const perfdata::FileAttr* attr = reader.attr_for(r);
    if (attr == nullptr) return;
    a.total_samples++;
    auto sample = perf::Sample::parse(r, attr->layout);
    if (!sample.ok()) return;
    analysis::symbolize_sample(sym, *sample, r.cpumode(), /*stack=*/false, frames);
    if (frames.empty()) return;
    const symbols::Frame& f = frames.front().frame;
    const size_t i = f.bpf_program - 1;
    if (f.kind != symbols::FrameKind::kBpf || f.bpf_program == 0 || i >= progs.size() ||
        listing_of[i] < 0) {
      count_callees(*sample, r.cpumode());
      return;
    }
    Listing& l = a.listings[listing_of[i]];
    l.samples++;
    if (!l.unavailable.empty()) return;
    const int k = f.bpf_function < function_map[i].size() ? function_map[i][f.bpf_function] : -1;
    if (k < 0) {
      l.samples_outside++;
      return;
    }
    const uint64_t off = frames.front().lookup - progs[i].functions[f.bpf_function].addr;
    if (off > UINT32_MAX || !add_samples(l.functions[k], static_cast<uint32_t>(off), 1)) {
      l.samples_outside++;
    }
  });
  if (!walked.ok()) return std::move(walked).error();
  for (Listing& l : a.listings) {
    for (AnnotatedFunction& f : l.functions) finish_counts(f);
  }
  return a;
}

std::vector<std::string> closest_names(std::string_view query,
                                       std::span<const std::string> candidates, size_t max) {
  // Levenshtein distance with one row; containing the query ranks first.
  auto distance = [&](std::string_view c) {
    if (!query.empty() && c.find(query) != std::string_view::npos) return size_t{0};
    std::vector<size_t> row(c.size() + 1);
    for (size_t j = 0; j <= c.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= query.size(); ++i) {
      size_t diag = row[0];
      row[0] = i;
      for (size_t j = 1; j <= c.size(); ++j) {
        const size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (query[i - 1] == c[j - 1] ? 0 : 1)});
        diag = up;
      }
    }
    return row[c.size()] + 1;
  };
  std::vector<std::pair<size_t, std::string>> scored;
  for (const std::string& c : candidates) scored.emplace_back(distance(c), c);
  std::sort(scored.begin(), scored.end());
  scored.erase(std::unique(scored.begin(), scored.end()), scored.end());
  std::vector<std::string> out;
  for (auto& [d, c] : scored) {
    if (out.size() == max) break;
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(std::move(c));
  }
  return out;
}

}  // namespace bpfprof::annotate
