// SPDX-License-Identifier: Apache-2.0
#include "script/line_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include "analysis/aggregate.h"
#include "script/line_parts.h"

namespace bpfprof::script {
namespace {

// The line's end for leaf `leaf` at `ip`: "{ip:16x} {sym}+0x{off} ({dso})\n",
// without "+0x{off}" when the symbol is not known. At most kLineFixed bytes
// besides the symbol and the dso.
char* put_tail(char* p, uint64_t ip, const symbols::Frame& leaf) {
  const bool known = offset_known(leaf, ip);
  p = put_hex(p, ip, 16);
  p = put(p, " ");
  p = put(p, leaf.symbol);
  if (known) {
    p = put(p, "+0x");
    p = put_hex(p, ip - leaf.symbol_start);
  }
  p = put(p, " (");
  p = put(p, leaf.dso);
  return put(p, ")\n");
}

// The event name of samples of `layout` (an attr's), and the width perf
// gives names: that of the longest of the recording's events.
std::string_view event_name(const analysis::Session& session, const perf::SampleLayout* layout,
                            LineScratch& scratch) {
  if (scratch.events.empty()) {
    const auto& attrs = session.reader().attrs();
    for (size_t i = 0; i < attrs.size(); i++) {
      std::string name = attrs[i].name.empty() ? "event" + std::to_string(i) : attrs[i].name;
      scratch.event_width = std::max(scratch.event_width, name.size());
      scratch.events.emplace_back(&attrs[i].layout, std::move(name));
    }
  }
  for (const auto& [l, name] : scratch.events) {
    if (l == layout) return name;
  }
  return "[unknown]";
}

// Room a frame's text needs besides its symbol and dso: its lead, 16
// columns of ip, "+0x" and 16 hex digits, the separators and the writers'
// kPad bytes of slack.
constexpr size_t kFrameFixed = 64 + kPad;

// One frame as perf script prints it after `lead`: "{ip:16x} {sym}+0x{off}
// ({dso})", each part as the fields ask. Written with the text buffer's
// writers: a callchain has a line per frame, and formatting each through fmt
// and a string cost more than symbolizing it.
char* put_frame(char* p, std::string_view lead, const analysis::SymbolizedFrame& f,
                uint32_t fields) {
  p = put(p, lead);
  if (fields & kFieldIp) p = put_hex(p, f.ip, 16);
  if (fields & kFieldSym) {
    p = put(p, " ");
    p = put(p, f.frame.symbol);
    if ((fields & kFieldSymoff) && offset_known(f.frame, f.ip)) {
      p = put(p, "+0x");
      p = put_hex(p, f.ip - f.frame.symbol_start);
    }
  }
  if (fields & kFieldDso) {
    p = put(p, " (");
    p = put(p, f.frame.dso);
    p = put(p, ")");
  }
  return p;
}

// Appends the line of callchain frame `r` of `sample`: kept text while the
// symbolizer's answer for it holds, else symbolized, written and kept.
void append_chain_frame(const symbols::Symbolizer& sym, const perf::Sample& sample,
                        const analysis::FrameRequest& r, uint32_t fields, LineScratch& scratch,
                        TextBuffer& out) {
  const uint8_t kind = r.unmapped ? 2 : r.kernel ? 1 : 0;
  const uint32_t pid = kind == 1 ? 0 : sample.pid;
  const uint64_t key = (r.ip ^ (uint64_t{pid} << 40) ^ kind) * 0x9e3779b97f4a7c15ULL;
  static_assert(LineScratch::kFrameTexts == 4096);  // the top 12 bits pick the slot
  LineScratch::FrameText& kept = scratch.frame_texts[key >> 52];
  if (kept.size != 0 && kept.ip == r.ip && kept.lookup == r.lookup && kept.pid == pid &&
      kept.kind == kind && sample.time >= kept.from && sample.time < kept.to) {
    out.append({kept.text, kept.size});
    return;
  }
  symbols::Symbolizer::Holds holds{0, UINT64_MAX};
  const analysis::SymbolizedFrame fr = analysis::symbolize_frame(sym, sample, r, &holds);
  char* p = out.reserve(kFrameFixed + fr.frame.symbol.size() + fr.frame.dso.size());
  char* const start = p;
  p = put_frame(p, "\t", fr, fields);
  p = put(p, "\n");
  out.commit(p);
  const size_t n = static_cast<size_t>(p - start);
  kept.size = 0;
  if (n <= sizeof kept.text) {
    kept.ip = r.ip;
    kept.lookup = r.lookup;
    kept.from = holds.from;
    kept.to = holds.to;
    kept.pid = pid;
    kept.kind = kind;
    kept.size = static_cast<uint16_t>(n);
    std::memcpy(kept.text, start, n);
  }
}

// `n` columns of spaces, however many.
char* put_spaces(char* p, size_t n) {
  for (; n > kPad; n -= kPad) p = put_pad(p, kPad, ' ');
  return put_pad(p, static_cast<unsigned>(n), ' ');
}

// perf script's layout for the fields `o.fields`: the header fields, then
// the frames one a line (with callchains), or the leaf on the same line.
// fmt pads by display width; for ASCII that is the byte count, so only a
// comm that is not ASCII goes through fmt.
void format_fields(const analysis::Session& session, const analysis::OrderedSample& ref,
                   const perf::Sample& sample, const ScriptOptions& o, LineScratch& scratch,
                   TextBuffer& out) {
  const symbols::Symbolizer& sym = session.symbolizer();
  const uint32_t f = o.fields;
  const bool chain = o.callchain && (f & kFieldIp);
  std::string_view comm, event;
  std::string unnamed;     // ":tid", as perf names a thread no COMM named
  bool comm_done = false;  // a comm that is not ASCII, padded by fmt
  if (f & kFieldComm) {
    comm = sym.comm(sample.pid, sample.tid, sample.time);
    if (comm.empty()) comm = unnamed = ":" + std::to_string(signed_id(sample.tid));
    if (!chain && !is_ascii(comm)) {
      out.append(fmt::format("{:>16} ", comm));
      comm_done = true;
    }
  }
  if (f & kFieldEvent) event = event_name(session, ref.layout, scratch);
  char* p = out.reserve(kLineFixed + comm.size() + event.size() + scratch.event_width);
  if ((f & kFieldComm) && !comm_done) {
    if (!chain && comm.size() < 16) p = put_pad(p, 16 - static_cast<unsigned>(comm.size()), ' ');
    p = put(p, comm);
    p = put(p, " ");
  }
  if ((f & kFieldPid) && (f & kFieldTid)) {
    p = put_int(p, signed_id(sample.pid), 5);
    p = put(p, "/");
    p = put_int(p, signed_id(sample.tid), 5, true);
    p = put(p, " ");
  } else if (f & (kFieldPid | kFieldTid)) {
    p = put_int(p, signed_id((f & kFieldPid) ? sample.pid : sample.tid), 5);
    p = put(p, " ");
  }
  if (f & kFieldCpu) {
    p = put(p, "[");
    p = put_uint(p, sample.cpu, 3, '0');
    p = put(p, "] ");
  }
  if (f & kFieldTime) {
    const uint64_t seconds = sample.time / 1000000000;
    const unsigned width = decimal_digits(seconds) + 7;  // "S.uuuuuu"
    if (width < 12) p = put_pad(p, 12 - width, ' ');
    p = put_uint(p, seconds);
    p = put(p, ".");
    p = put_uint(p, sample.time % 1000000000 / 1000, 6, '0');
    p = put(p, ": ");
  }
  if (f & kFieldPeriod) {
    p = put_uint(p, sample.period, 10);
    p = put(p, " ");
  }
  if (f & kFieldEvent) {
    if (event.size() < scratch.event_width) p = put_spaces(p, scratch.event_width - event.size());
    p = put(p, event);
    p = put(p, ": ");
  }
  if (f & (kFieldIp | kFieldSym | kFieldDso)) {
    if (chain) {
      p = put(p, "\n");
      out.commit(p);
      analysis::for_each_frame(sample, ref.record.cpumode(), true,
                               [&](const analysis::FrameRequest& r) {
                                 append_chain_frame(sym, sample, r, f, scratch, out);
                               });
      p = out.reserve(kPad);
    } else {
      analysis::symbolize_sample(sym, sample, ref.record.cpumode(), false, scratch.frames);
      if (!scratch.frames.empty()) {
        const analysis::SymbolizedFrame& fr = scratch.frames.front();
        out.commit(p);
        p = out.reserve(kFrameFixed + fr.frame.symbol.size() + fr.frame.dso.size());
        p = put_frame(p, (f & kFieldIp) ? " " : "", fr, f);
      }
    }
  }
  p = put(p, "\n");  // the line's end, or with callchains the blank line after the frames
  out.commit(p);
}

}  // namespace

void format_sample(const analysis::Session& session, const analysis::OrderedSample& ref,
                   const ScriptOptions& options, LineScratch& scratch, TextBuffer& out) {
  const ScriptFormat format = options.format;
  std::vector<analysis::SymbolizedFrame>& frames = scratch.frames;
  perf::Sample& parsed = scratch.parsed;
  if (!perf::Sample::parse_fast(ref.record, *ref.layout, parsed)) {
    auto full = perf::Sample::parse(ref.record, *ref.layout);
    if (!full.ok()) {
      // Pass 1 accepted the header; a body that does not parse is still a sample.
      out.append(format == ScriptFormat::kJson
                     ? fmt::format("{{\"error\":\"bad sample at byte offset 0x{:x}\"}}\n",
                                   ref.record.offset)
                     : fmt::format("# bad sample at byte offset 0x{:x}\n", ref.record.offset));
      return;
    }
    parsed = *full;
  }
  const perf::Sample* sample = &parsed;
  const symbols::Symbolizer& sym = session.symbolizer();
  if (format == ScriptFormat::kText && options.fields != 0) {
    format_fields(session, ref, *sample, options, scratch, out);
    return;
  }
  if (format == ScriptFormat::kJson) {
    format_json(session, ref, *sample, options, scratch, out);
    return;
  }
  // "{:>16} {:>7}/{:<7} [{:03}] {}.{:06}: {:16x} {}+0x{:x} ({})\n" by hand.
  // fmt pads by display width; for ASCII that is the byte count.
  // A kept thread text holds while its comm does, and was made from an ASCII one.
  const uint64_t time = sample->time;
  LineScratch::Thread& th = scratch.threads[sample->cpu % scratch.threads.size()];
  const bool kept = th.size != 0 && th.pid == sample->pid && th.tid == sample->tid &&
                    th.cpu == sample->cpu && time >= th.comm_from && time < th.comm_to;
  std::string_view comm;
  symbols::Symbolizer::Holds comm_holds;
  std::string unnamed;  // ":tid", as perf names a thread no COMM named
  if (!kept) {
    comm = sym.comm(sample->pid, sample->tid, time, comm_holds);
    if (comm.empty()) comm = unnamed = ":" + std::to_string(signed_id(sample->tid));
  }
  const bool ascii = kept || is_ascii(comm);
  if (!ascii) out.append(fmt::format("{:>16}", comm));
  // The leaf from the tail kept for its ip (and process, for user code)
  // while the symbolizer's answer there holds, else looked up.
  LineScratch::Tail* tail = nullptr;
  bool tail_kept = false;
  const symbols::Frame* leaf = &kNoFrame;
  uint64_t ip = sample->ip;
  symbols::Frame looked_up;
  if (sample->ip != 0) {
    const bool kernel =
        symbols::Symbolizer::looks_up_kernel(ip, ref.record.cpumode() == perf::kMiscKernel);
    const uint32_t pid = kernel ? 0 : sample->pid;  // kernel code: no process's
    tail =
        &scratch.tails[((ip ^ (ip >> 11) ^ (uint64_t{pid} << 40)) * 0x9e3779b97f4a7c15ULL) >> 52];
    static_assert(LineScratch::kTails == 4096);  // the top 12 bits pick the slot
    tail_kept = tail->size != 0 && tail->ip == ip && tail->pid == pid && tail->kernel == kernel &&
                time >= tail->from && time < tail->to;
    if (!tail_kept) {
      symbols::Symbolizer::Holds holds;
      looked_up = sym.lookup(sample->pid, ip, time, kernel, holds);
      leaf = &looked_up;
      // Its text is written below, if it fits (not zeroed: only `size` bytes count).
      tail->ip = ip;
      tail->from = holds.from;
      tail->to = holds.to;
      tail->pid = pid;
      tail->kernel = kernel;
      tail->size = 0;
    }
  } else {
    analysis::symbolize_sample(sym, *sample, ref.record.cpumode(), false, frames);
    if (!frames.empty()) {
      leaf = &frames.front().frame;
      ip = frames.front().ip;
    }
  }
  char* p = out.reserve(kLineFixed + comm.size() + sizeof tail->text + leaf->symbol.size() +
                        leaf->dso.size());
  if (kept) {
    static_assert(sizeof th.text == 64);
    copy64(p, th.text);
    p += th.size;
  } else {
    char* const start = p;
    if (ascii) {
      if (comm.size() < 16) p = put_pad(p, 16 - static_cast<unsigned>(comm.size()), ' ');
      p = put(p, comm);
    }
    p = put(p, " ");
    p = put_int(p, signed_id(sample->pid), 7);
    p = put(p, "/");
    p = put_int(p, signed_id(sample->tid), 7, true);
    p = put(p, " [");
    p = put_uint(p, sample->cpu, 3, '0');
    p = put(p, "] ");
    th.size = 0;
    if (ascii && static_cast<size_t>(p - start) <= sizeof th.text) {
      th = {comm_holds.from, comm_holds.to, sample->pid, sample->tid, sample->cpu,
            static_cast<size_t>(p - start), {}};
      std::memcpy(th.text, start, th.size);
    }
  }
  auto& sec = scratch.second;
  if (sec.seconds != sample->time / 1000000000) {
    sec.seconds = sample->time / 1000000000;
    char* q = put_uint(sec.text, sec.seconds);
    *q++ = '.';
    sec.size = static_cast<size_t>(q - sec.text);
  }
  std::memcpy(p, sec.text, sizeof sec.text);
  p += sec.size;
  p = put_uint(p, sample->time % 1000000000 / 1000, 6, '0');
  p = put(p, ": ");
  if (tail_kept) {
    std::memcpy(p, tail->text, sizeof tail->text);
    p += tail->size;
  } else {
    char* const start = p;
    p = put_tail(p, ip, *leaf);
    const size_t n = static_cast<size_t>(p - start);
    if (tail != nullptr && n <= sizeof tail->text) {
      std::memcpy(tail->text, start, n);
      tail->size = static_cast<uint32_t>(n);
    }
  }
  out.commit(p);
}

}  // namespace bpfprof::script
