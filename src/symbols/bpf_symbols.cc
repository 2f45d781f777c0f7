// SPDX-License-Identifier: Apache-2.0
#include "symbols/bpf_symbols.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "perf/abi.h"

namespace bpfprof::symbols {
namespace {

// A precise program symbol beats a trampoline, dispatcher or OOL page that
// the kernel reports page-sized and overlapping its neighbours.
constexpr uint8_t kPriorityImage = 1;
constexpr uint8_t kPriorityProgram = 2;
constexpr std::string_view kProgPrefix = "bpf_prog_";

}  // namespace

std::string_view program_name_from_ksym(std::string_view ksym) {
  constexpr size_t kTagHex = 16;
  if (!ksym.starts_with(kProgPrefix) || ksym.size() < kProgPrefix.size() + kTagHex) return ksym;
  std::string_view rest = ksym.substr(kProgPrefix.size() + kTagHex);
  if (rest.empty()) return ksym;  // no name part: the ksym is the best name we have
  return rest.front() == '_' ? rest.substr(1) : ksym;
}

bool is_bpf_image_name(std::string_view name) {
  return name.starts_with("bpf_trampoline_") || name.starts_with("bpf_dispatcher_");
}

BpfSymbols::BpfSymbols(const perfdata::Features& features, StringPool& pool, DiagCounts& diag)
    : features_(features), pool_(pool), diag_(diag) {
  for (const bpf::ProgInfo& p : features_.bpf_prog_info) info_by_id_.emplace(p.id(), &p);
}

void BpfSymbols::unregister_at(uint64_t time, uint64_t addr) {
  auto it = open_by_addr_.find(addr);
  if (it == open_by_addr_.end()) return;
  const uint32_t e = it->second;
  timeline_.close(e, time);
  open_by_addr_.erase(it);
  std::erase_if(pending_, [e](const Pending& p) { return p.entry == e; });
}

void BpfSymbols::on_ksymbol(uint64_t time, uint32_t cpu, uint64_t addr, uint32_t len,
                            uint16_t ksym_type, bool unregister, std::string_view name) {
  if (unregister) {
    if (!open_by_addr_.contains(addr)) {
      ++diag_[Diag::kKsymbolUnregisterUnknown];
      return;
    }
    unregister_at(time, addr);
    return;
  }
  // A register over a live one means we missed its unregister: end it here.
  unregister_at(time, addr);
  KsymPayload p{name, FrameKind::kBpf};
  uint8_t priority = kPriorityProgram;
  if (ksym_type != perf::kKsymTypeBpf) {
    p.kind = FrameKind::kKernel;  // out-of-line kernel code (kprobe/ftrace pages)
    priority = kPriorityImage;
  } else if (is_bpf_image_name(name)) {
    p.kind = FrameKind::kBpfImage;
    priority = kPriorityImage;
  }
  const uint32_t e = timeline_.add(addr, addr + len, time, priority, p);
  open_by_addr_[addr] = e;
  if (p.kind == FrameKind::kBpf && name.starts_with(kProgPrefix)) pending_.push_back({e, cpu});
}

void BpfSymbols::claim(uint32_t entry, uint32_t program, uint32_t function) {
  KsymPayload& p = timeline_.entry(entry).payload;
  p.program = program + 1;
  p.function = function;
  program_entries_[program].push_back(entry);
  std::erase_if(pending_, [entry](const Pending& q) { return q.entry == entry; });
}

void BpfSymbols::on_bpf_event(uint64_t time, uint32_t cpu, uint16_t type, uint32_t id,
                              const bpf::Tag& tag, uint32_t pid, uint32_t tid) {
  if (type == perf::kBpfEventProgLoad) {
    const size_t before = programs_.size();
    load(time, cpu, id, tag);
    if (programs_.size() > before) {
      programs_.back().loader_pid = pid;
      programs_.back().loader_tid = tid;
    }
  } else if (type == perf::kBpfEventProgUnload) {
    unload(time, id);
  }
}

void BpfSymbols::load(uint64_t time, uint32_t cpu, uint32_t id, const bpf::Tag& tag) {
  if (loaded_by_id_.contains(id)) return;  // described twice (synthesized and live)
  const uint32_t index = static_cast<uint32_t>(programs_.size());
  BpfProgram& prog = programs_.emplace_back();
  program_entries_.emplace_back();
  prog.id = id;
  prog.tag = tag;
  prog.load_time = time;
  if (auto it = info_by_id_.find(id); it != info_by_id_.end() && it->second->tag() == tag) {
    prog.info = it->second;
  } else {
    ++diag_[Diag::kProgramsWithoutInfo];
  }

  const std::string tag_prefix = std::string(kProgPrefix) + bpf::tag_hex(tag);
  if (prog.info && !prog.info->jited_ksyms.empty()) {
    // The stored info says exactly where each function is.
    const bpf::ProgInfo& info = *prog.info;
    for (size_t i = 0; i < info.jited_ksyms.size(); ++i) {
      const uint64_t addr = info.jited_ksyms[i];
      const uint32_t len = i < info.jited_func_lens.size() ? info.jited_func_lens[i] : 0;
      auto open = open_by_addr_.find(addr);
      std::string_view name;
      if (open != open_by_addr_.end()) {
        name = timeline_.entry(open->second).payload.name;
      } else if (i < info.ksym_names.size() && !info.ksym_names[i].empty()) {
        name = pool_.intern(info.ksym_names[i]);
      } else {
        const bpf::Tag& t = i < info.prog_tags.size() ? info.prog_tags[i] : tag;
        name = pool_.intern(bpf::ksym_name(t, i == 0 ? info.name() : std::string("F")));
      }
      uint32_t e;
      if (open != open_by_addr_.end()) {
        e = open->second;
      } else {
        // The KSYMBOL was lost or never written: the info still names the code.
        e = timeline_.add(addr, addr + len, time, kPriorityProgram, KsymPayload{name, FrameKind::kBpf});
        open_by_addr_[addr] = e;
      }
      claim(e, index, static_cast<uint32_t>(i));
      prog.functions.push_back(BpfFunction{std::string(name), addr, len});
    }
  } else {
    // The kernel writes a program's KSYMBOLs right before its PROG_LOAD, on
    // the same CPU; fall back to a tag match if the task migrated between.
    std::vector<uint32_t> mine;
    for (const Pending& p : pending_) {
      if (p.cpu == cpu) mine.push_back(p.entry);
    }
    if (mine.empty()) {
      for (const Pending& p : pending_) {
        if (timeline_.entry(p.entry).payload.name.starts_with(tag_prefix)) mine.push_back(p.entry);
      }
    }
    // Main function first: it is the one carrying the program's tag.
    std::stable_partition(mine.begin(), mine.end(), [&](uint32_t e) {
      return timeline_.entry(e).payload.name.starts_with(tag_prefix);
    });
    for (size_t i = 0; i < mine.size(); ++i) {
      const auto& entry = timeline_.entry(mine[i]);
      prog.functions.push_back(BpfFunction{std::string(entry.payload.name), entry.start,
                                           static_cast<uint32_t>(entry.end - entry.start)});
      claim(mine[i], index, static_cast<uint32_t>(i));
    }
  }
  if (prog.functions.empty()) ++diag_[Diag::kBpfEventWithoutKsymbol];

  // info.name is cut at 15 characters; the ksym carries the full BTF name.
  std::string_view from_ksym =
      prog.functions.empty() ? std::string_view{} : program_name_from_ksym(prog.functions[0].ksym);
  if (prog.info) {
    prog.name = prog.info->name();
    if (from_ksym.size() > prog.name.size() && from_ksym.starts_with(prog.name)) prog.name = from_ksym;
  }
  if (prog.name.empty()) prog.name = from_ksym;
  loaded_by_id_[id] = index;
}

void BpfSymbols::attach_metadata(const std::unordered_map<std::string, Metadata>& by_name) {
  for (BpfProgram& prog : programs_) {
    for (const BpfFunction& fn : prog.functions) {
      if (auto it = by_name.find(fn.ksym); it != by_name.end()) {
        prog.metadata = it->second;
        break;
      }
    }
    // What the recorder read from its .rodata map (section 248), one list.
    if (prog.info != nullptr) bpf::merge_metadata(prog.metadata, prog.info->metadata);
  }
}

void BpfSymbols::unload(uint64_t time, uint32_t id) {
  auto it = loaded_by_id_.find(id);
  if (it == loaded_by_id_.end()) return;  // loaded before recording and not synthesized
  const uint32_t index = it->second;
  loaded_by_id_.erase(it);
  programs_[index].unload_time = time;
  // Normally the KSYMBOL unregisters came first; end whatever is still open.
  for (uint32_t e : program_entries_[index]) {
    auto open = open_by_addr_.find(timeline_.entry(e).start);
    if (open != open_by_addr_.end() && open->second == e) unregister_at(time, open->first);
  }
}

}  // namespace bpfprof::symbols
