// SPDX-License-Identifier: Apache-2.0
#include "analysis/aggregate.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "analysis/cost.h"
#include "analysis/program_table.h"
#include "analysis/sample_frames.h"
#include "analysis/sample_memo.h"

namespace bpfprof::analysis {
namespace {

// Chunks a pass-2 thread takes at once (about 30k samples).
constexpr size_t kChunksPerClaim = 8;
using profile::Counts;
using profile::FrameKind;
using profile::StackId;

inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

// A symbolized frame by identity: the symbolizer's strings are views into
// storage that lives (unchanged) as long as the session, so equal pointers
// mean equal text. Different pointers to equal text only cost a cache entry
// more: Profile::add_frame still interns by content.
struct FrameRef {
  const char* symbol;
  const char* dso;
  uint32_t symbol_len, dso_len;
  uint32_t bpf_program, bpf_function;
  FrameKind kind;

  bool operator==(const FrameRef&) const = default;
  static FrameRef of(const symbols::Frame& f) {
    return FrameRef{f.symbol.data(),
                    f.dso.data(),
                    static_cast<uint32_t>(f.symbol.size()),
                    static_cast<uint32_t>(f.dso.size()),
                    f.bpf_program,
                    f.bpf_function,
                    f.kind};
  }
  uint64_t hash() const {
    uint64_t h = mix(reinterpret_cast<uintptr_t>(symbol), reinterpret_cast<uintptr_t>(dso));
    h = mix(h, (uint64_t{symbol_len} << 32) | dso_len);
    h = mix(h, (uint64_t{bpf_program} << 32) | bpf_function);
    return mix(h, static_cast<uint64_t>(kind));
  }
};
struct FrameRefHash {
  size_t operator()(const FrameRef& f) const { return f.hash(); }
};

// Who ran a sample, by identity (comm and cgroup are views into the
// symbolizer or the worker's own names).
struct ThreadRef {
  uint32_t pid, tid;
  const char* comm;
  size_t comm_len;
  const char* cgroup;
  size_t cgroup_len;

  bool operator==(const ThreadRef&) const = default;
  uint64_t hash() const {
    const uint64_t h =
        mix(mix((uint64_t{pid} << 32) | tid, reinterpret_cast<uintptr_t>(comm)), comm_len);
    return mix(mix(h, reinterpret_cast<uintptr_t>(cgroup)), cgroup_len);
  }
};

// Leaf-only reports (no -g, no source lines): the whole key of a sample.
struct LeafKey {
  FrameRef frame;
  ThreadRef thread;
  profile::ChargeId charge;
  bool operator==(const LeafKey&) const = default;
};
struct LeafKeyHash {
  size_t operator()(const LeafKey& k) const {
    return mix(mix(k.frame.hash(), k.thread.hash()), k.charge);
  }
};
struct StackKey {
  StackId stack;
  ThreadRef thread;
  profile::ChargeId charge;
  bool operator==(const StackKey&) const = default;
};
struct StackKeyHash {
  size_t operator()(const StackKey& k) const {
    return mix(mix(k.stack, k.thread.hash()), k.charge);
  }
};

// Per-worker state: its profile, which also holds the diagnostics of its
// samples (counted where each problem is found; merging the profiles adds
// them up), scratch buffers reused across samples, and caches from
// symbolizer results (by identity) to the profile's ids and count slots, so
// that a sample whose frames and thread were seen before costs no string
// hashing.
// Ids are still handed out by the profile in first-seen order: a cache miss
// asks the profile, so ids are those a run without caches would give.
struct Worker {
  explicit Worker(uint64_t samples) : memos(samples) {}
  profile::Profile profile;
  perf::Sample sample;
  std::vector<SymbolizedFrame> frames;
  std::vector<SymbolizedFrame> chain_frames;  // the whole chain, when `frames` is the leaf
  profile::Charge charge;
  CostCache cost_cache;
  std::vector<profile::FrameId> ids;
  std::string line;
  std::unordered_map<LeafKey, Counts*, LeafKeyHash> leaf_slots;
  std::unordered_map<FrameRef, profile::FrameId, FrameRefHash> frame_ids;
  std::unordered_map<StackKey, Counts*, StackKeyHash> stack_slots;
  SampleMemos memos;
  std::unordered_map<uint64_t, std::string> unnamed_cgroups;  // id -> "[cgroup id N]"

  DiagCounts& diag() { return profile.diagnostics(); }
};

constexpr std::string_view kUnknownCgroup = "[unknown]";

// The sample's cgroup as reports name it: its path from a CGROUP record;
// `[unknown]` when the sample carries none, `[cgroup id N]` when no record
// named it (both counted).
std::string_view cgroup_name(const symbols::Symbolizer& sym, uint64_t id, Worker& w) {
  if (id == 0) {
    w.diag()[Diag::kCgroupUnknown]++;
    return kUnknownCgroup;
  }
  std::string_view path = sym.cgroup_path(id);
  if (!path.empty()) return path;
  w.diag()[Diag::kCgroupUnknown]++;
  auto [it, fresh] = w.unnamed_cgroups.try_emplace(id);
  if (fresh) it->second = fmt::format("[cgroup id {}]", id);
  return it->second;
}

profile::FrameId frame_id(Worker& w, const symbols::Frame& f, std::string_view line) {
  const profile::Frame frame{f.symbol, f.dso, line, f.kind, f.bpf_program, f.bpf_function};
  if (!line.empty()) return w.profile.add_frame(frame);  // `line` is scratch text
  auto [it, fresh] = w.frame_ids.try_emplace(FrameRef::of(f), 0);
  if (fresh) it->second = w.profile.add_frame(frame);
  return it->second;
}

// The count slot of a sample not remembered: its frames symbolized, its
// thread named, the profile asked for ids. `holds` gets the times around the
// sample's for which all of that gives the same answer.
// The charge of a sample with a callchain (0: none), counted in `w`'s
// diagnostics when the chain does not prove one.
profile::ChargeId charge_of(const CostModel& cost, const perf::Sample& sample, uint16_t cpumode,
                            bool stacks, const symbols::Symbolizer& sym, Worker& w,
                            symbols::Symbolizer::Holds& holds) {
  if (sample.callchain.empty()) return 0;
  if (!stacks) symbolize_for_charge(sym, sample, cpumode, w.chain_frames, &holds);
  const std::vector<SymbolizedFrame>& chain = stacks ? w.frames : w.chain_frames;
  switch (cost.classify(chain, chain_truncated(sample), sample.pid, sample.time, w.cost_cache,
                        w.charge, &holds)) {
    case CostOutcome::kCharged:
      return w.profile.add_charge(w.charge);
    case CostOutcome::kUnattributed:
      w.diag()[Diag::kBpfDispatchUnattributed]++;
      return 0;
    case CostOutcome::kUnproven:
      w.diag()[Diag::kBpfCostUnproven]++;
      return 0;
    case CostOutcome::kNone:
      return 0;
  }
  return 0;
}

Counts* find_slot(const Session& session, const AggregateOptions& options, const CostModel& cost,
                  const perf::Sample& sample, uint16_t cpumode, Worker& w,
                  symbols::Symbolizer::Holds& holds) {
  const symbols::Symbolizer& sym = session.symbolizer();
  holds = {0, UINT64_MAX};
  symbolize_sample(sym, sample, cpumode, options.stacks, w.frames, &holds);
  const profile::ChargeId charge = charge_of(cost, sample, cpumode, options.stacks, sym, w, holds);
  for (const SymbolizedFrame& sf : w.frames) {
    const symbols::Unknown u = sf.frame.unknown;
    if (u != symbols::Unknown::kNone) w.diag()[symbols::unknown_frames_diag(u)]++;
  }
  if (!w.frames.empty() && w.frames.front().frame.unknown == symbols::Unknown::kBpfNotAlive) {
    w.diag()[Diag::kBpfSamplesUnattributed]++;
  }
  symbols::Symbolizer::Holds comm_holds;
  std::string_view comm = sym.comm(sample.pid, sample.tid, sample.time, comm_holds);
  holds.from = std::max(holds.from, comm_holds.from);
  holds.to = std::min(holds.to, comm_holds.to);
  if (comm.empty()) comm = "[unknown]";
  const std::string_view cgroup = options.cgroups ? cgroup_name(sym, sample.cgroup, w) : "";
  const ThreadRef thread{sample.pid, sample.tid, comm.data(), comm.size(), cgroup.data(),
                         cgroup.size()};
  const profile::Thread profile_thread{sample.pid, sample.tid, comm, cgroup};

  if (!options.stacks && !options.lines && w.frames.size() == 1) {
    const symbols::Frame& f = w.frames.front().frame;
    auto [it, fresh] =
        w.leaf_slots.try_emplace(LeafKey{FrameRef::of(f), thread, charge}, nullptr);
    if (fresh) {
      w.ids.assign(1, frame_id(w, f, {}));
      it->second = &w.profile.slot(w.profile.add_stack(w.ids), profile_thread, charge);
    }
    return it->second;
  }
  w.ids.clear();
  for (const SymbolizedFrame& sf : w.frames) {
    const symbols::Frame& f = sf.frame;
    std::string_view line;
    if (options.lines && f.kind == symbols::FrameKind::kBpf) {
      if (auto l = sym.bpf_line(f, sf.lookup)) {
        w.line = fmt::format("{}:{}", l->file, l->line);
        line = w.line;
      }
    }
    w.ids.push_back(frame_id(w, f, line));
  }
  const profile::StackId stack = w.profile.add_stack(w.ids);
  auto [it, fresh] = w.stack_slots.try_emplace(StackKey{stack, thread, charge}, nullptr);
  if (fresh) it->second = &w.profile.slot(stack, profile_thread, charge);
  return it->second;
}

void add_sample(const Session& session, const AggregateOptions& options, const CostModel& cost,
                const perf::RecordView& record, const perf::SampleLayout& layout, Worker& w) {
  perf::Sample& sample = w.sample;
  if (!perf::Sample::parse_fast(record, layout, sample)) {
    auto full = perf::Sample::parse(record, layout);
    if (!full.ok()) {
      w.diag()[Diag::kSamplesBad]++;
      return;
    }
    sample = *full;
  }
  if (!options.filter.keep(sample.pid, sample.time)) return;
  if (!options.filter.comm.empty() &&
      session.symbolizer().comm(sample.pid, sample.tid, sample.time) != options.filter.comm) {
    return;
  }
  const uint16_t cpumode = record.cpumode();
  const bool kernel = cpumode == perf::kMiscKernel;
  const SampleMemos::Key key = SampleMemos::key_of(sample, kernel, options.stacks);
  if (Counts* hit = w.memos.find(key, sample, kernel, w.diag())) {
    w.profile.add_to(*hit, sample.period, sample.time);
    return;
  }
  const MemoCounts before(w.diag());
  symbols::Symbolizer::Holds holds;
  Counts* slot = find_slot(session, options, cost, sample, cpumode, w, holds);
  w.profile.add_to(*slot, sample.period, sample.time);
  w.memos.remember(key, sample, kernel, slot, holds, before, MemoCounts(w.diag()));
}

// Chunks [first, last) into `w`. Pass 1 accepted every record in them, so
// the walk fails only if the file changed under us; that is counted.
void run_chunks(const Session& session, const AggregateOptions& options, const CostModel& cost,
                size_t first, size_t last, Worker& w) {
  Status walked = session.for_each_sample(
      first, last, [&](const perf::RecordView& record, const perf::SampleLayout& layout) {
        add_sample(session, options, cost, record, layout, w);
      });
  if (!walked.ok()) w.diag()[Diag::kSampleChunksUnreadable]++;
}

// The programs of the table whose owner, owner's cgroup or attach point the
// recording does not tell.
void count_unknown_programs(const std::vector<ProgramRow>& programs, DiagCounts& diag) {
  for (const ProgramRow& p : programs) {
    diag[Diag::kBpfOwnerUnknown] += p.owner == "[unknown]";
    // A process named as owner, its cgroup not.
    diag[Diag::kBpfOwnerCgroupUnknown] +=
        !p.owner_pids.empty() && p.owner_cgroup.find("[unknown]") != std::string::npos;
    diag[Diag::kBpfAttachUnknown] += p.attach_points.empty();
  }
}

}  // namespace

ReportData aggregate(const Session& session, const AggregateOptions& options) {
  const size_t chunks = session.chunk_count();
  unsigned threads = options.threads;
  if (threads == 0) {
    // Below a few thousand samples a thread costs more than it saves.
    threads = std::max(1u, std::thread::hardware_concurrency());
    threads = static_cast<unsigned>(
        std::min<uint64_t>(threads, std::max<uint64_t>(1, session.sample_count() / 4096)));
  }
  threads = static_cast<unsigned>(std::clamp<size_t>(chunks, 1, threads));
  // Contiguous chunk ranges (parts) merged in order: frames and stacks get the
  // ids a single thread would give them, however the chunks are split.
  // Threads start on equal parts; one that runs out halves the part with the
  // most chunks left (the first chunks cost more: ELF symbols load on first
  // use), so no thread waits long for another.
  struct Part {
    size_t begin, next, end;
    Worker worker;
  };
  const CostModel cost(session.symbolizer(), session.reader().features());
  std::deque<Part> parts;  // stable addresses
  std::mutex mu;
  auto first_chunk = [&](unsigned t) { return chunks * t / threads; };
  for (unsigned t = 0; t < threads; t++) {
    parts.push_back(
        Part{first_chunk(t), first_chunk(t), first_chunk(t + 1), Worker(session.sample_count())});
  }
  auto run = [&](Part* part) {
    for (;;) {
      size_t first = 0, last = 0;
      {
        std::lock_guard lock(mu);
        if (part->next == part->end) {
          Part* most = nullptr;
          for (Part& p : parts) {
            const size_t left = p.end - p.next;
            if (left >= 2 && (!most || left > most->end - most->next)) most = &p;
          }
          if (!most) return;
          const size_t mid = most->next + (most->end - most->next) / 2;
          parts.push_back(Part{mid, mid, most->end, Worker(session.sample_count())});
          most->end = mid;
          part = &parts.back();
        }
        // A few chunks per claim: one walk each, and short enough to split.
        first = part->next;
        last = std::min(part->end, first + kChunksPerClaim);
        part->next = last;
      }
      run_chunks(session, options, cost, first, last, part->worker);
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; t++) pool.emplace_back(run, &parts[t]);
  run(&parts[0]);
  for (std::thread& th : pool) th.join();

  std::vector<Part*> order;
  for (Part& p : parts) order.push_back(&p);
  std::sort(order.begin(), order.end(),
            [](const Part* a, const Part* b) { return a->begin < b->begin; });
  Worker& first = order[0]->worker;
  for (size_t i = 1; i < order.size(); i++) first.profile.merge(order[i]->worker.profile);
  ReportData data;
  data.header = session.header();
  if (auto e = session.symbolizer().kallsyms_damage()) {
    data.header.unreadable_sections.push_back(e->to_string());
  }
  for (const perfdata::FileAttr& a : session.reader().attrs()) {
    data.callchains = data.callchains || (a.attr.sample_type & PERF_SAMPLE_CALLCHAIN) != 0;
  }
  data.profile = std::move(first.profile);
  data.programs =
      program_table(session.symbolizer(), session.reader().features(), data.profile);
  DiagCounts& diag = data.profile.diagnostics();
  count_unknown_programs(data.programs, diag);
  diag += session.diagnostics();
  return data;
}

}  // namespace bpfprof::analysis
