// SPDX-License-Identifier: Apache-2.0
// The Symbolizer facade: pass 1 buffers side-band records (copies of what
// matters, since record bytes may not outlive the call), finish() puts them
// in time order (the only place that does) and applies them to the
// timelines, pass 2 looks up.
#include "symbols/symbolizer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "base/string_pool.h"
#include "symbols/bpf_lines.h"
#include "symbols/bpf_symbols.h"
#include "symbols/elf_symbols.h"
#include "symbols/kernel_symbols.h"
#include "symbols/process_maps.h"

namespace bpfprof::symbols {
namespace {

constexpr std::string_view kKernelDso = "[kernel.kallsyms]";
constexpr std::string_view kBpfDso = "[bpf]";
// Canonical kernel half of the address space (x86-64, arm64): an ip here is
// kernel code even if the caller's cpumode said otherwise.
constexpr size_t kMaxBuildId = 20;

// What pass 1 keeps of one side-band record.
struct Event {
  uint64_t time = 0;
  uint32_t type = 0;
  uint16_t misc = 0;
  uint32_t pid = 0, tid = 0, ppid = 0, ptid = 0, cpu = 0;
  uint64_t addr = 0, len = 0, pgoff = 0;
  uint16_t ksym_type = 0, flags = 0;
  uint32_t id = 0;
  bpf::Tag tag{};
  std::string_view name;  // interned
  uint8_t build_id_size = 0;
  uint8_t build_id[kMaxBuildId] = {};
  bool first = false;  // stamped 0 or not stamped: before timed records of the same time
};

}  // namespace

struct Symbolizer::Impl {
  Impl(const perfdata::Features& f, Options o)
      : features(f), options(std::move(o)), elf(options.symfs, options.full_signatures), bpf(f, pool, diag),
        maps(elf), lines(f) {
    // The recording's vDSO: [vdso] frames are read from it, nothing else.
    const Bytes vdso = !features.vdso.empty() ? features.vdso : options.vdso;
    if (!vdso.empty()) maps.set_vdso_slot(elf.image_slot("[vdso]", vdso));
    // Opening the snapshot needs no side-band record: a table of version 2
    // is only checked (a few hundred microseconds); version 1 is decompressed
    // and parsed, on a thread while the caller walks the file for the
    // side-band records (finish() waits for it).
    if (options.kallsyms) {
      kernel.set_table(*options.kallsyms);
      kallsyms_opened = true;
    } else if (features.kallsyms) {
      kernel.set_table(perfdata::KallsymsTable::from_text(*features.kallsyms));
    } else if (!features.kallsyms_packed.empty()) {
      if (packed_version() == 2) {
        open_kallsyms();
      } else {
        try {
          kallsyms_open = std::thread([this] { open_kallsyms(); });
        } catch (const std::system_error&) {
          // No thread: finish() opens it.
        }
      }
    }
  }
  uint32_t packed_version() const {
    const Bytes b = features.kallsyms_packed;
    return b.size() >= 4 ? load_unaligned<uint32_t>(b.data()) : 0;
  }
  void open_kallsyms() {
    if (kallsyms_opened) return;
    kallsyms_opened = true;
    auto table = perfdata::KallsymsTable::open(features.kallsyms_packed, features.kallsyms_packed_at);
    if (!table.ok()) {
      kallsyms_error = std::move(table).error();
      return;
    }
    kernel.set_table(std::move(table).value());
  }
  ~Impl() {
    if (kallsyms_open.joinable()) kallsyms_open.join();
  }

  void add(const perf::RecordView& r, const perf::SampleLayout& layout);
  void apply(const Event& e);
  Frame lookup_kernel(uint64_t ip, uint64_t time, Symbolizer::Holds* holds = nullptr) const;
  // The kernel frame at `ip` given what the BPF timeline found there.
  Frame kernel_frame(uint64_t ip, const BpfSymbols::Timeline::Hit& hit) const;
  Frame lookup_user(uint32_t pid, uint64_t ip, uint64_t time,
                    Symbolizer::Holds* holds = nullptr) const;

  const perfdata::Features& features;
  Options options;
  DiagCounts diag;
  StringPool pool;
  ElfCache elf;
  BpfSymbols bpf;
  ProcessMaps maps;
  KernelSymbols kernel;
  BpfLines lines;
  std::vector<Event> events;
  std::unordered_map<uint64_t, std::string_view> cgroups;  // CGROUP: id -> path
  uint64_t first_clock = 0;  // the newest time of the records that sort first
  bool finished = false;
  // BPF_METADATA by the function name it names; the first record wins.
  std::unordered_map<std::string, BpfSymbols::Metadata> bpf_metadata;
  uint64_t serial = 0;  // set by finish(): lookups may remember answers then
  std::thread kallsyms_open;
  bool kallsyms_opened = false;         // open_kallsyms() ran (or runs on kallsyms_open)
  std::optional<Error> kallsyms_error;  // features.kallsyms_packed did not open
};

void Symbolizer::Impl::add(const perf::RecordView& r, const perf::SampleLayout& layout) {
  Event e;
  e.type = r.header.type;
  e.misc = r.header.misc;
  auto bad = [&] { ++diag[Diag::kSidebandBadRecords]; };
  perf::SampleId sid;
  switch (r.header.type) {
    case perf::kRecordKsymbol: {
      auto k = perf::Ksymbol::parse(r, layout);
      if (!k.ok()) return bad();
      e.addr = k->addr;
      e.len = k->len;
      e.ksym_type = k->ksym_type;
      e.flags = k->flags;
      e.name = pool.intern(k->name);
      sid = k->sample_id;
      break;
    }
    case perf::kRecordBpfEvent: {
      auto b = perf::BpfEvent::parse(r, layout);
      if (!b.ok()) return bad();
      e.ksym_type = b->type;
      e.id = b->id;
      std::memcpy(e.tag.data(), b->tag, e.tag.size());
      sid = b->sample_id;
      e.pid = sid.pid;  // the task that loaded or unloaded it
      e.tid = sid.tid;
      break;
    }
    case perf::kRecordMmap: {
      auto m = perf::Mmap::parse(r, layout);
      if (!m.ok()) return bad();
      if (r.header.misc & perf::kMiscMmapData) return;  // data maps hold no code
      e.pid = m->pid;
      e.addr = m->start;
      e.len = m->len;
      e.pgoff = m->pgoff;
      e.name = pool.intern(m->filename);
      sid = m->sample_id;
      break;
    }
    case perf::kRecordMmap2: {
      auto m = perf::Mmap2::parse(r, layout);
      if (!m.ok()) return bad();
      if (m->prot != 0 && !(m->prot & PROT_EXEC)) return;
      e.pid = m->pid;
      e.addr = m->start;
      e.len = m->len;
      e.pgoff = m->pgoff;
      e.name = pool.intern(m->filename);
      e.build_id_size = static_cast<uint8_t>(std::min(m->build_id.size(), kMaxBuildId));
      // An MMAP2 without build id has an empty span (null data): memcpy
      // from null is undefined even for 0 bytes (UBSan says so).
      if (e.build_id_size != 0) std::memcpy(e.build_id, m->build_id.data(), e.build_id_size);
      sid = m->sample_id;
      break;
    }
    case perf::kRecordComm: {
      auto c = perf::Comm::parse(r, layout);
      if (!c.ok()) return bad();
      e.pid = c->pid;
      e.tid = c->tid;
      e.name = pool.intern(c->comm);
      sid = c->sample_id;
      break;
    }
    case perf::kRecordCgroup: {
      auto c = perf::Cgroup::parse(r, layout);
      if (!c.ok()) return bad();
      e.addr = c->id;
      e.name = pool.intern(c->path);
      sid = c->sample_id;
      break;
    }
    case perf::kRecordFork:
    case perf::kRecordExit: {
      auto f = perf::ForkExit::parse(r, layout);
      if (!f.ok()) return bad();
      e.pid = f->pid;
      e.ppid = f->ppid;
      e.tid = f->tid;
      e.ptid = f->ptid;
      sid = f->sample_id;
      if (!layout.time_of(r)) sid.time = f->time;
      break;
    }
    default:
      return;  // not consumed (Symbolizer::consumes)
  }
  e.cpu = sid.cpu;
  // The time order finish() applies (see add_sideband): records stamped 0
  // (the synthesized state) and records without a stamp come first, in file
  // order; a FORK or EXIT without one goes by its own time field, and a
  // record without any time by the newest time of those first records before
  // it (`first_clock`).
  const std::optional<uint64_t> stamp = layout.time_of(r);
  e.first = !stamp || *stamp == 0;
  const bool timed = stamp || r.header.type == perf::kRecordFork ||
                     r.header.type == perf::kRecordExit;
  e.time = timed ? sid.time : first_clock;
  if (e.first) first_clock = std::max(first_clock, e.time);
  events.push_back(e);
}

void Symbolizer::Impl::apply(const Event& e) {
  switch (e.type) {
    case perf::kRecordKsymbol:
      bpf.on_ksymbol(e.time, e.cpu, e.addr, static_cast<uint32_t>(e.len), e.ksym_type,
                     e.flags & perf::kKsymFlagUnregister, e.name);
      break;
    case perf::kRecordBpfEvent:
    {
      // Synthesized loads (time 0) name no loader: the state before recording;
      // nor does a trailer without a task (pid -1).
      const bool task = !e.first && e.pid != 0 && e.pid != UINT32_MAX;
      bpf.on_bpf_event(e.time, e.cpu, e.ksym_type, e.id, e.tag, task ? e.pid : 0,
                       task ? e.tid : 0);
    }
      break;
    case perf::kRecordMmap:
    case perf::kRecordMmap2:
      if ((e.misc & perf::kMiscCpumodeMask) == perf::kMiscKernel) {
        kernel.add_kernel_map(e.name, e.addr, e.len);
      } else {
        maps.on_mmap(e.time, e.pid, e.addr, e.len, e.pgoff, e.name,
                     std::span<const uint8_t>(e.build_id, e.build_id_size));
      }
      break;
    case perf::kRecordComm:
      maps.on_comm(e.time, e.pid, e.tid, e.name, e.misc & perf::kMiscCommExec);
      break;
    case perf::kRecordFork:
      maps.on_fork(e.time, e.pid, e.ppid, e.tid, e.ptid, e.misc & perf::kMiscForkExec);
      break;
    case perf::kRecordCgroup:
      // Ids are not reused while a machine runs; a cgroup removed during
      // the recording keeps the name it had.
      cgroups[e.addr] = e.name;
      break;
    default:
      break;  // EXIT: maps stay for samples at the exit time; a reused pid forks anew
  }
}

Frame Symbolizer::Impl::lookup_kernel(uint64_t ip, uint64_t time, Symbolizer::Holds* holds) const {
  // Samples repeat the same instructions: each thread keeps the last answer
  // per address (direct-mapped by address), with the times it holds for.
  struct Memo {
    uint64_t serial = 0, ip = 0, t_from = 0, t_to = 0;
    Frame frame;
  };
  constexpr size_t kMemo = 2048;
  // On the heap, made by the first lookup of each thread: as a thread_local
  // array it was static TLS, zeroed at every process and thread start.
  thread_local std::unique_ptr<Memo[]> memo;
  if (!memo) memo = std::make_unique<Memo[]>(kMemo);
  static_assert(kMemo == 2048);  // the top 11 bits of the hash pick the slot
  Memo& m = memo[((ip ^ (ip >> 11)) * 0x9e3779b97f4a7c15ULL) >> 53];
  if (serial != 0 && m.serial == serial && m.ip == ip && time >= m.t_from && time < m.t_to) {
    if (holds) *holds = {m.t_from, m.t_to};
    return m.frame;
  }
  const auto hit = bpf.find(ip, time);
  Frame f = kernel_frame(ip, hit);
  // Kernel text and module symbols do not change: the BPF timeline's answer
  // at this address sets how long the frame holds.
  if (holds) *holds = {hit.t_from, hit.t_to};
  if (serial != 0) m = Memo{serial, ip, hit.t_from, hit.t_to, f};
  return f;
}

Frame Symbolizer::Impl::kernel_frame(uint64_t ip, const BpfSymbols::Timeline::Hit& hit) const {
  Frame f;
  if (hit.entry != BpfSymbols::Timeline::kNone) {
    const auto& e = bpf.entry(hit.entry);
    f.kind = e.payload.kind;
    f.symbol = e.payload.name;
    f.dso = f.kind == FrameKind::kKernel ? kKernelDso : kBpfDso;
    f.symbol_start = e.start;
    f.bpf_program = e.payload.program;
    f.bpf_function = e.payload.function;
    return f;
  }
  if (kernel.has_snapshot()) {
    const auto s = kernel.find(ip);
    if (s && (s->exact || !hit.known_range)) {
      f.kind = s->module ? FrameKind::kModule : FrameKind::kKernel;
      f.symbol = s->name;
      f.dso = s->dso;
      f.symbol_start = s->start;
      return f;
    }
  }
  f.dso = hit.known_range ? kBpfDso : kKernelDso;
  f.unknown = hit.known_range       ? Unknown::kBpfNotAlive
              : kernel.has_snapshot() ? Unknown::kKernelNoSymbol
                                      : Unknown::kNoKallsyms;
  return f;
}

Frame Symbolizer::Impl::lookup_user(uint32_t pid, uint64_t ip, uint64_t time,
                                    Symbolizer::Holds* holds) const {
  Frame f;
  const ProcessMaps::Timeline* t = maps.process(pid);
  if (!t) {
    // No record named the process: so at every time.
    if (holds) *holds = {0, UINT64_MAX};
    f.unknown = Unknown::kNoProcess;
    return f;
  }
  const auto hit = t->find(ip, time);
  // The mapping found (or none) sets how long the frame holds: its file's
  // symbols do not change.
  if (holds) *holds = {hit.t_from, hit.t_to};
  if (hit.entry == ProcessMaps::Timeline::kNone) {
    f.unknown = Unknown::kNoMap;
    return f;
  }
  const auto& m = t->entry(hit.entry);
  const MappedFile& file = maps.file(m.payload.file);
  f.dso = file.path;
  if (file.elf == ElfCache::kNoSlot) {
    f.unknown = file.vdso ? Unknown::kNoVdso : Unknown::kNoFile;
    return f;
  }
  // The vDSO's image is the recording's, read whatever --symfs or the host has.
  const ElfSymbols* elf_syms = options.read_elf || file.vdso ? elf.get(file.elf) : nullptr;
  if (!elf_syms || (!file.build_id.empty() && !elf_syms->build_id().empty() &&
                    file.build_id != elf_syms->build_id())) {
    f.unknown = file.vdso ? Unknown::kNoVdso : Unknown::kNoElf;
    return f;
  }
  const auto vaddr = elf_syms->offset_to_vaddr(ip - m.start + m.payload.pgoff);
  const std::optional<ElfSymbols::Symbol> s = vaddr ? elf_syms->find(*vaddr) : std::nullopt;
  if (!s) {
    f.unknown = Unknown::kNoSymbol;
    return f;
  }
  f.kind = FrameKind::kUser;
  f.symbol = s->name;
  f.symbol_start = ip - (*vaddr - s->addr);
  return f;
}

Symbolizer::Symbolizer(const perfdata::Features& features, Options options)
    : impl_(std::make_unique<Impl>(features, std::move(options))) {}
Symbolizer::~Symbolizer() = default;

bool Symbolizer::consumes(uint32_t type) {
  switch (type) {
    case perf::kRecordKsymbol:
    case perf::kRecordBpfEvent:
    case perf::kRecordMmap:
    case perf::kRecordMmap2:
    case perf::kRecordComm:
    case perf::kRecordFork:
    case perf::kRecordExit:
    case perf::kRecordCgroup:
      return true;
    default:
      return false;
  }
}

void Symbolizer::add_sideband(const perf::RecordView& r, const perf::SampleLayout& layout) {
  if (consumes(r.header.type)) impl_->add(r, layout);
}

void Symbolizer::add_bpf_metadata(const perf::BpfMetadata& m) {
  auto [it, added] = impl_->bpf_metadata.try_emplace(std::string(m.prog_name));
  if (!added) return;
  // perf printed the values: their type is not known.
  for (const auto& [key, value] : m.entries) {
    it->second.push_back(
        bpf::MetadataVar{std::string(key), std::string(value), bpf::MetadataKind::kPrinted});
  }
}

void Symbolizer::finish() {
  Impl& m = *impl_;
  if (m.finished) return;
  m.finished = true;
  std::stable_sort(m.events.begin(), m.events.end(), [](const Event& a, const Event& b) {
    return a.time != b.time ? a.time < b.time : a.first && !b.first;
  });
  for (const Event& e : m.events) m.apply(e);
  std::vector<Event>().swap(m.events);
  // The BPF timeline's index and the kernel symbols share nothing: built at once.
  std::thread bpf_index;
  try {
    bpf_index = std::thread([&m] { m.bpf.finish(); });
  } catch (const std::system_error&) {
    // No thread: built below.
  }
  // After the kernel MMAPs: they cap the last symbol of each module.
  if (m.kallsyms_open.joinable()) {
    m.kallsyms_open.join();
  } else if (!m.options.kallsyms && !m.features.kallsyms && !m.features.kallsyms_packed.empty()) {
    m.open_kallsyms();
  }
  if (m.kernel.has_snapshot()) m.kernel.build();
  m.maps.finish();
  if (bpf_index.joinable()) {
    bpf_index.join();
  } else {
    m.bpf.finish();
  }
  m.bpf.attach_metadata(m.bpf_metadata);
  m.lines.set_programs(m.bpf.programs());
  m.serial = next_timeline_serial();
}

Frame Symbolizer::lookup(uint32_t pid, uint64_t ip, uint64_t time, bool kernel) const {
  if (looks_up_kernel(ip, kernel)) return impl_->lookup_kernel(ip, time);
  return impl_->lookup_user(pid, ip, time);
}

Frame Symbolizer::lookup(uint32_t pid, uint64_t ip, uint64_t time, bool kernel,
                         Holds& holds) const {
  if (looks_up_kernel(ip, kernel)) return impl_->lookup_kernel(ip, time, &holds);
  return impl_->lookup_user(pid, ip, time, &holds);
}

Frame Symbolizer::lookup_kernel(uint64_t ip, uint64_t time, Holds& holds) const {
  return impl_->lookup_kernel(ip, time, &holds);
}

std::optional<SourceLine> Symbolizer::bpf_line(const Frame& frame, uint64_t ip) const {
  if (frame.kind != FrameKind::kBpf || frame.bpf_program == 0) return std::nullopt;
  return impl_->lines.find(frame.bpf_program - 1, frame.bpf_function, ip);
}

std::string_view Symbolizer::comm(uint32_t pid, uint32_t tid, uint64_t time) const {
  return impl_->maps.comm(pid, tid, time);
}

std::string_view Symbolizer::comm(uint32_t pid, uint32_t tid, uint64_t time, Holds& holds) const {
  const ProcessMaps::CommSpan span = impl_->maps.comm_span(pid, tid, time);
  holds = {span.from, span.to};
  return span.comm;
}

std::string_view Symbolizer::cgroup_path(uint64_t id) const {
  auto it = impl_->cgroups.find(id);
  return it == impl_->cgroups.end() ? std::string_view() : it->second;
}

const std::vector<BpfProgram>& Symbolizer::bpf_programs() const { return impl_->bpf.programs(); }
const DiagCounts& Symbolizer::diagnostics() const { return impl_->diag; }
const std::optional<Error>& Symbolizer::kallsyms_error() const { return impl_->kallsyms_error; }
std::optional<Error> Symbolizer::kallsyms_damage() const { return impl_->kernel.damage(); }

}  // namespace bpfprof::symbols
