// SPDX-License-Identifier: Apache-2.0
#include "analysis/cost.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "analysis/aggregate.h"
#include "profile/group.h"

namespace bpfprof::analysis {
namespace {

constexpr std::string_view kPerfEventPoints = "tracepoint/ kprobe/ kretprobe/ uprobe/ uretprobe/";
constexpr std::string_view kTrampolinePoints = "fentry/ fexit/ fmod_ret/ lsm/ freplace/";
constexpr std::string_view kRawTpPoints = "raw_tp/ tp_btf/";
constexpr std::string_view kSyscallPoints =
    "tracepoint/syscalls/ tracepoint/raw_syscalls/ raw_tp/sys_enter raw_tp/sys_exit "
    "tp_btf/sys_enter tp_btf/sys_exit";
constexpr std::string_view kTestRunPoints = "test_run syscall";

// Keep docs/cost.md's table in step (cost_test checks it).
constexpr std::array kTable = {
    DispatchFrame{"__bpf_prog_enter*", "trampoline", kTrampolinePoints, false, false,
                  "a trampoline calls it before each program: RCU and migration off, recursion "
                  "check, run-time statistics"},
    DispatchFrame{"__bpf_prog_exit*", "trampoline", kTrampolinePoints, false, false,
                  "its counterpart after each program"},
    DispatchFrame{"bpf_trampoline_*", "trampoline", kTrampolinePoints, false, false,
                  "the trampoline image itself, generated only for attached programs"},
    DispatchFrame{"bpf_dispatcher_*", "xdp", "xdp", false, false,
                  "the dispatcher image that calls the attached XDP programs directly"},
    DispatchFrame{"trace_call_bpf", "perf event", kPerfEventPoints, false, false,
                  "runs the programs of a perf event (tracepoint, kprobe, uprobe): the program "
                  "array, bpf_prog_active, migration off"},
    DispatchFrame{"perf_trace_run_bpf_submit", "tracepoint", "tracepoint/", false, false,
                  "hands a tracepoint's record to its programs, then to perf"},
    DispatchFrame{"perf_trace_buf_alloc", "tracepoint", "tracepoint/", false, false,
                  "allocates the per-CPU record a perf tracepoint event fills for its programs"},
    DispatchFrame{"perf_tp_event*", "tracepoint", "tracepoint/", false, false,
                  "delivers the record to the perf events on the tracepoint, the program's "
                  "among them"},
    DispatchFrame{"perf_call_bpf_enter", "syscall tracepoint", "tracepoint/syscalls/sys_enter_",
                  false, false, "builds the record a sys_enter_* program reads and runs it"},
    DispatchFrame{"perf_call_bpf_exit", "syscall tracepoint", "tracepoint/syscalls/sys_exit_",
                  false, false, "builds the record a sys_exit_* program reads and runs it"},
    DispatchFrame{"perf_syscall_enter", "syscall tracepoint", "tracepoint/syscalls/sys_enter_",
                  false, false,
                  "the probe behind every syscalls:sys_enter_* perf event, registered while "
                  "one is open"},
    DispatchFrame{"perf_syscall_exit", "syscall tracepoint", "tracepoint/syscalls/sys_exit_",
                  false, false,
                  "the probe behind every syscalls:sys_exit_* perf event, registered while one "
                  "is open"},
    DispatchFrame{"perf_trace_*", "tracepoint", "tracepoint/", true, false,
                  "the perf probe of tracepoint *, registered while a perf event (here a "
                  "program's) is open on it: builds the record the program reads"},
    DispatchFrame{"kprobe_perf_func", "kprobe", "kprobe/", false, false,
                  "runs a kprobe's perf event and its programs"},
    DispatchFrame{"kretprobe_perf_func", "kprobe", "kretprobe/", false, false,
                  "runs a kretprobe's perf event and its programs"},
    DispatchFrame{"uprobe_perf_func", "uprobe", "uprobe/ uretprobe/", false, false,
                  "runs a uprobe's perf event and its programs"},
    DispatchFrame{"uretprobe_perf_func", "uprobe", "uretprobe/", false, false,
                  "runs a uretprobe's perf event and its programs"},
    DispatchFrame{"kprobe_multi_link_*", "kprobe_multi", "kprobe_multi", false, false,
                  "the fprobe handler of a kprobe_multi link, which exists only for its program"},
    DispatchFrame{"uprobe_multi_link_*", "uprobe_multi", "uprobe_multi", false, false,
                  "the handler of a uprobe_multi link, which exists only for its program"},
    DispatchFrame{"__bpf_trace_run", "raw tracepoint", kRawTpPoints, false, false,
                  "runs one raw-tracepoint program: recursion check, RCU, run-time statistics"},
    DispatchFrame{"bpf_trace_run*", "raw tracepoint", kRawTpPoints, false, false,
                  "calls __bpf_trace_run with the tracepoint's arguments"},
    DispatchFrame{"__bpf_trace_*", "raw tracepoint", kRawTpPoints, true, false,
                  "the BPF probe of tracepoint *, registered only while a raw-tracepoint "
                  "program is attached"},
    DispatchFrame{"syscall_trace_enter", "syscall tracepoint", kSyscallPoints, false, true,
                  "the syscall entry slow path every task takes while a syscall tracepoint is "
                  "enabled; only its own code (what it calls — audit, seccomp, ptrace — is "
                  "not BPF's)"},
    DispatchFrame{"syscall_exit_work", "syscall tracepoint", kSyscallPoints, false, true,
                  "the syscall exit slow path, the same way"},
    DispatchFrame{"__cgroup_bpf_run_filter_*", "cgroup", "cgroup sockops", false, false,
                  "runs the programs of a cgroup hook (socket, skb, sockaddr, sysctl, sockopt)"},
    DispatchFrame{"bpf_prog_run_array_cg*", "cgroup", "cgroup sockops", false, false,
                  "walks a cgroup's effective program array"},
    DispatchFrame{"__cgroup_bpf_check_dev_permission", "cgroup", "cgroup/dev", false, false,
                  "runs the cgroup device programs"},
    DispatchFrame{"sk_filter_trim_cap", "socket filter", "socket_filter", false, false,
                  "runs a socket's filter program on each packet"},
    DispatchFrame{"bpf_prog_run_generic_xdp", "xdp", "xdp", false, false,
                  "runs a generic-mode XDP program"},
    DispatchFrame{"do_xdp_generic", "xdp", "xdp", false, false,
                  "prepares the packet for a generic-mode XDP program (only when one is "
                  "attached)"},
    DispatchFrame{"netif_receive_generic_xdp", "xdp", "xdp", false, false,
                  "linearizes the skb for a generic-mode XDP program"},
    DispatchFrame{"cls_bpf_classify", "tc", "tc/", false, false,
                  "the classic tc classifier that runs BPF filters"},
    DispatchFrame{"bpf_overflow_handler", "perf event", "perf_event", false, false,
                  "runs a program attached to a perf event's overflow"},
    DispatchFrame{"bpf_test_run", "test run", kTestRunPoints, false, false,
                  "BPF_PROG_TEST_RUN's loop around the program", true},
    DispatchFrame{"bpf_prog_test_run_*", "test run", kTestRunPoints, false, false,
                  "BPF_PROG_TEST_RUN's setup of the program's input and output", true},
};

bool matches(std::string_view pattern, std::string_view symbol) {
  if (pattern.ends_with('*')) return symbol.starts_with(pattern.substr(0, pattern.size() - 1));
  return pattern == symbol;
}

// The tracepoint name a named entry's '*' stands for in `symbol`.
std::string_view name_part(const DispatchFrame& e, std::string_view symbol) {
  return e.named ? symbol.substr(e.pattern.size() - 1) : std::string_view();
}

bool point_qualifies(const DispatchFrame& e, std::string_view name, std::string_view point) {
  std::string_view rest = e.points;
  bool prefix = false;
  while (!rest.empty() && !prefix) {
    const size_t space = std::min(rest.find(' '), rest.size());
    prefix = point.starts_with(rest.substr(0, space));
    rest.remove_prefix(std::min(rest.size(), space + 1));
  }
  if (!prefix) return false;
  return !e.named || (point.size() > name.size() && point.ends_with(name) &&
                      point[point.size() - name.size() - 1] == '/');
}

struct WindowFrame {
  const DispatchFrame* entry;
  std::string_view name;
};

// Kernel code, known or not: a user frame without a symbol is unknown too,
// but for a user-space reason, and a chain's user part charges no program.
bool is_kernel(const symbols::Frame& f) {
  using symbols::FrameKind;
  using symbols::Unknown;
  if (f.kind == FrameKind::kUnknown) {
    return f.unknown == Unknown::kNoKallsyms || f.unknown == Unknown::kKernelNoSymbol ||
           f.unknown == Unknown::kBpfNotAlive;
  }
  return f.kind == FrameKind::kKernel || f.kind == FrameKind::kModule ||
         f.kind == FrameKind::kBpf || f.kind == FrameKind::kBpfImage;
}

}  // namespace

const std::span<const DispatchFrame> kDispatchFrames{kTable};

void symbolize_for_charge(const symbols::Symbolizer& sym, const perf::Sample& sample,
                          uint16_t cpumode, std::vector<SymbolizedFrame>& out,
                          symbols::Symbolizer::Holds* holds) {
  out.clear();
  bool done = false;
  for_each_frame(sample, cpumode, true, [&](const FrameRequest& r) {
    if (done || !r.kernel) {
      done = true;  // the user part: classify stops there
      return;
    }
    out.push_back(symbolize_frame(sym, sample, r, holds));
    const symbols::Frame& f = out.back().frame;
    done = !is_kernel(f) || (f.kind == symbols::FrameKind::kBpf && f.bpf_program != 0);
  });
}

const DispatchFrame* dispatch_frame(std::string_view symbol) {
  for (const DispatchFrame& e : kTable) {
    if (matches(e.pattern, symbol)) return &e;
  }
  return nullptr;
}

void CostTally::add(const profile::Charge& c, uint64_t n) {
  if (c.programs.empty() || c.programs.back() > self.size()) return;
  if (c.kind == profile::ChargeKind::kCallee) {
    callees[c.programs.front() - 1] += n;
  } else if (c.kind == profile::ChargeKind::kDispatch && c.programs.size() == 1) {
    dispatch[c.programs.front() - 1] += n;
  } else if (c.kind == profile::ChargeKind::kDispatch) {
    shared_[c.programs] += n;
  }
}

void CostTally::finish() {
  std::vector<uint64_t> weights;
  for (const auto& [programs, n] : shared_) {
    weights.clear();
    for (uint32_t i : programs) weights.push_back(self[i - 1] + callees[i - 1]);
    const std::vector<uint64_t> shares = profile::split_by_weight(n, weights);
    for (size_t k = 0; k < programs.size(); k++) {
      dispatch[programs[k] - 1] += shares[k];
      estimated[programs[k] - 1] = true;
    }
  }
  shared_.clear();
}

bool chain_truncated(const perf::Sample& sample) {
  constexpr size_t kDefaultMaxStack = 127;
  const perf::U64Array& chain = sample.callchain;
  if (chain.size() < kDefaultMaxStack) return false;
  for (size_t i = 0; i < chain.size(); i++) {
    if (chain[i] == perf::kContextUser) return false;
  }
  return true;
}

CostModel::CostModel(const symbols::Symbolizer& sym, const perfdata::Features& features) {
  const AttachIndex index = attach_index(features);
  for (const symbols::BpfProgram& prog : sym.bpf_programs()) {
    Program p;
    if (auto it = index.find(prog.id); it != index.end()) p.points = it->second;
    program_owner(sym, features, prog, &p.owner_pids);
    p.load_time = prog.load_time;
    if (prog.unload_time) p.unload_time = *prog.unload_time;
    programs_.push_back(std::move(p));
  }
}

CostOutcome CostModel::classify(std::span<const SymbolizedFrame> frames, bool truncated,
                                uint32_t pid, uint64_t time, CostCache& cache,
                                profile::Charge& charge, symbols::Symbolizer::Holds* holds) const {
  charge.programs.clear();
  std::vector<WindowFrame> window;
  size_t i = 0;
  for (; i < frames.size(); i++) {
    const symbols::Frame& f = frames[i].frame;
    if (!is_kernel(f)) break;  // the user part
    if (frames[i].ip == 0 || f.unknown == symbols::Unknown::kBpfNotAlive) {
      return CostOutcome::kUnproven;
    }
    if (f.kind == symbols::FrameKind::kBpf && f.bpf_program != 0) {
      charge.kind = i == 0 ? profile::ChargeKind::kSelf : profile::ChargeKind::kCallee;
      charge.programs.push_back(f.bpf_program);
      return CostOutcome::kCharged;
    }
    const DispatchFrame* e = dispatch_frame(f.symbol);
    if (e != nullptr && (!e->leaf_only || i == 0)) {
      window.push_back({e, name_part(*e, f.symbol)});
      break;
    }
  }
  if (window.empty()) return truncated ? CostOutcome::kUnproven : CostOutcome::kNone;
  // The hook's other frames up to the chain's end or a program frame (a
  // hook run from inside a program's helper is that hook's, not the program's)
  // narrow which programs it runs.
  for (i++; i < frames.size(); i++) {
    const symbols::Frame& f = frames[i].frame;
    if (!is_kernel(f) || f.kind == symbols::FrameKind::kBpf) break;
    const DispatchFrame* e = dispatch_frame(f.symbol);
    if (e != nullptr && !e->leaf_only) window.push_back({e, name_part(*e, f.symbol)});
  }
  std::string key;
  for (const WindowFrame& w : window) {
    key += fmt::format("{}:{};", w.entry - kTable.data(), w.name);
  }
  auto [it, fresh] = cache.try_emplace(key);
  if (fresh) {
    for (size_t p = 0; p < programs_.size(); p++) {
      const bool all = std::all_of(window.begin(), window.end(), [&](const WindowFrame& w) {
        return std::any_of(programs_[p].points.begin(), programs_[p].points.end(),
                           [&](const std::string& point) {
                             return point_qualifies(*w.entry, w.name, point);
                           });
      });
      if (all) it->second.push_back(static_cast<uint32_t>(p + 1));
    }
  }
  for (uint32_t p : it->second) {
    const Program& prog = programs_[p - 1];
    if (time >= prog.load_time && time < prog.unload_time) {
      charge.programs.push_back(p);
      if (holds) {
        holds->from = std::max(holds->from, prog.load_time);
        holds->to = std::min(holds->to, prog.unload_time);
      }
    } else if (holds && time < prog.load_time) {
      holds->to = std::min(holds->to, prog.load_time);
    } else if (holds) {
      holds->from = std::max(holds->from, prog.unload_time);
    }
  }
  if (charge.programs.empty()) return CostOutcome::kUnattributed;
  if (window.front().entry->run_by_owner) {
    auto owned = [&](uint32_t p) {
      const std::vector<uint32_t>& pids = programs_[p - 1].owner_pids;
      return std::find(pids.begin(), pids.end(), pid) != pids.end();
    };
    if (std::any_of(charge.programs.begin(), charge.programs.end(), owned)) {
      std::erase_if(charge.programs, [&](uint32_t p) { return !owned(p); });
    }
  }
  charge.kind = profile::ChargeKind::kDispatch;
  return CostOutcome::kCharged;
}

}  // namespace bpfprof::analysis
