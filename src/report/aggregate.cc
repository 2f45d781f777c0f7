// SPDX-License-Identifier: Apache-2.0
#include "report/aggregate.h"

#include <algorithm>
#include <array>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "report/sample_frames.h"

namespace bpfprof::report {
namespace {

constexpr size_t kUnknownReasons = symbols::kUnknownCount;

// Per-worker state: its profile, counters kept as plain integers until the
// end, and scratch buffers reused across samples.
struct Worker {
  profile::Profile profile;
  std::array<uint64_t, kUnknownReasons> unknown_frames{};
  uint64_t bad_samples = 0;
  uint64_t bpf_unattributed = 0;
  std::vector<SymbolizedFrame> frames;
  std::vector<profile::FrameId> ids;
  std::string line;
  uint64_t chunks_unreadable = 0;
};

void add_sample(const Session& session, const AggregateOptions& options,
                const perf::RecordView& record, const perf::SampleLayout& layout, Worker& w) {
  const symbols::Symbolizer& sym = session.symbolizer();
  auto sample = perf::Sample::parse(record, layout);
  if (!sample.ok()) {
    w.bad_samples++;
    return;
  }
  if (!options.filter.keep(sample->pid, sample->time)) return;
  symbolize_sample(sym, *sample, record.cpumode(), options.stacks, w.frames);
  w.ids.clear();
  for (const SymbolizedFrame& sf : w.frames) {
    const symbols::Frame& f = sf.frame;
    if (f.unknown != symbols::Unknown::kNone) {
      w.unknown_frames[static_cast<size_t>(f.unknown) % kUnknownReasons]++;
    }
    std::string_view line;
    if (options.lines && f.kind == symbols::FrameKind::kBpf) {
      if (auto l = sym.bpf_line(f, sf.lookup)) {
        w.line = fmt::format("{}:{}", l->file, l->line);
        line = w.line;
      }
    }
    w.ids.push_back(w.profile.add_frame(
        profile::Frame{f.symbol, f.dso, line, f.kind, f.bpf_program, f.bpf_function}));
  }
  if (!w.frames.empty() && w.frames.front().frame.unknown == symbols::Unknown::kBpfNotAlive) {
    w.bpf_unattributed++;
  }
  profile::StackId stack = w.profile.add_stack(w.ids);
  std::string_view comm = sym.comm(sample->pid, sample->tid, sample->time);
  profile::Thread thread{sample->pid, sample->tid, comm.empty() ? "[unknown]" : comm};
  w.profile.add_sample(stack, thread, sample->period, sample->time);
}

// Chunks [first, last) into `w`. Pass 1 accepted every record in them, so
// the walk fails only if the file changed under us; that is counted.
void run_chunks(const Session& session, const AggregateOptions& options, size_t first,
                size_t last, Worker& w) {
  Status walked = session.for_each_sample(
      first, last, [&](const perf::RecordView& record, const perf::SampleLayout& layout) {
        add_sample(session, options, record, layout, w);
      });
  if (!walked.ok()) w.chunks_unreadable++;
}

// Counter names (JSON keys) for unknown-frame reasons.
std::string reason_key(symbols::Unknown u) {
  using symbols::Unknown;
  switch (u) {
    case Unknown::kNone: return "none";
    case Unknown::kNoKallsyms: return "no_kallsyms";
    case Unknown::kKernelNoSymbol: return "kernel_no_symbol";
    case Unknown::kBpfNotAlive: return "bpf_not_alive";
    case Unknown::kNoMap: return "no_map";
    case Unknown::kNoElf: return "no_elf";
    case Unknown::kNoSymbol: return "no_symbol";
    case Unknown::kNoProcess: return "no_process";
    case Unknown::kNoFile: return "no_file";
  }
  return fmt::format("reason_{}", static_cast<int>(u));
}

void add_counters(const Session& session, const Worker& merged, profile::Profile& p) {
  for (const auto& [name, value] : session.counters()) p.count(name, value);
  const symbols::Diagnostics& d = session.symbolizer().diagnostics();
  p.count("sideband_out_of_order", d.sideband_out_of_order);
  p.count("ksymbol_unregister_unknown", d.ksymbol_unregister_unknown);
  p.count("bpf_event_without_ksymbol", d.bpf_event_without_ksymbol);
  p.count("programs_without_info", d.programs_without_info);
  p.count("sideband_bad_records", d.sideband_bad_records);
  p.count("samples_bad", merged.bad_samples);
  p.count("bpf_samples_unattributed", merged.bpf_unattributed);
  // Listed only when it happens (the file changed between the passes).
  if (merged.chunks_unreadable != 0) p.count("sample_chunks_unreadable", merged.chunks_unreadable);
  for (size_t i = 1; i < kUnknownReasons; i++) {
    p.count("unknown_frames." + reason_key(static_cast<symbols::Unknown>(i)),
            merged.unknown_frames[i]);
  }
}

std::vector<ProgramRow> program_table(const symbols::Symbolizer& sym, const profile::Profile& p) {
  std::vector<ProgramRow> rows;
  for (const symbols::BpfProgram& prog : sym.bpf_programs()) {
    ProgramRow row;
    row.id = prog.id;
    row.name = prog.name;
    row.tag = bpf::tag_hex(prog.tag);
    row.load_ns = prog.load_time;
    row.unload_ns = prog.unload_time;
    for (const symbols::BpfFunction& fn : prog.functions) row.functions.push_back({fn.ksym, 0});
    rows.push_back(std::move(row));
  }
  for (const auto& [key, counts] : p.samples()) {
    const profile::Frame* leaf = p.leaf(key.stack);
    if (leaf == nullptr || leaf->kind != profile::FrameKind::kBpf || leaf->bpf_program == 0 ||
        leaf->bpf_program > rows.size()) {
      continue;
    }
    ProgramRow& row = rows[leaf->bpf_program - 1];
    row.samples += counts.samples;
    if (leaf->bpf_function < row.functions.size()) {
      row.functions[leaf->bpf_function].samples += counts.samples;
    }
  }
  return rows;
}

}  // namespace

std::vector<std::string> program_names(const ReportData& data) {
  std::vector<std::string> names;
  for (const ProgramRow& p : data.programs) names.push_back(p.name);
  return names;
}

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
  // Contiguous chunk ranges merged in order: frames and stacks get the ids a
  // single thread would give them, whatever the thread count.
  std::vector<Worker> workers(threads);
  std::vector<std::thread> pool;
  auto first_chunk = [&](unsigned t) { return chunks * t / threads; };
  for (unsigned t = 1; t < threads; t++) {
    pool.emplace_back([&, t] {
      run_chunks(session, options, first_chunk(t), first_chunk(t + 1), workers[t]);
    });
  }
  run_chunks(session, options, 0, first_chunk(1), workers[0]);
  for (std::thread& th : pool) th.join();

  Worker& first = workers[0];
  for (unsigned t = 1; t < threads; t++) {
    first.profile.merge(workers[t].profile);
    for (size_t i = 0; i < kUnknownReasons; i++) first.unknown_frames[i] += workers[t].unknown_frames[i];
    first.bad_samples += workers[t].bad_samples;
    first.bpf_unattributed += workers[t].bpf_unattributed;
    first.chunks_unreadable += workers[t].chunks_unreadable;
  }
  ReportData data;
  data.header = session.header();
  data.profile = std::move(first.profile);
  add_counters(session, first, data.profile);
  data.programs = program_table(session.symbolizer(), data.profile);
  return data;
}

}  // namespace bpfprof::report
