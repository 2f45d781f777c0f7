// SPDX-License-Identifier: Apache-2.0
#include "script/script.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/sample_frames.h"
#include "analysis/time_order.h"

namespace bpfprof::report {
namespace {

// Samples per batch: the unit the walk hands to the formatting threads.
// Memory is a few batches (record copies and text) however long the file.
constexpr size_t kBatch = 1 << 13;

// Time windows (plan_time_windows) own about 1/128 of the data section each,
// within these bounds: enough windows to keep every thread busy and the
// windows' overlap (a couple of rounds) small, few enough bytes per window
// that the windows in flight stay a few tens of MiB.
constexpr uint64_t kWindowsPerFile = 128;
constexpr uint64_t kMinWindowBytes = 1 << 20, kMaxWindowBytes = 8 << 20;

// Text of many lines, written through a raw pointer: a line reserves room
// for its longest form, writes its fields with plain stores and commits what
// it used. Growing does not zero the new bytes, and clear() keeps the
// capacity, so a buffer refilled for every batch costs no allocation.
class TextBuffer {
 public:
  // At least `n` writable bytes at the returned pointer, until commit().
  char* reserve(size_t n) {
    if (capacity_ - size_ < n) grow(n);
    return data_.get() + size_;
  }
  // Keeps the bytes written from reserve()'s pointer up to `end`.
  void commit(char* end) { size_ = static_cast<size_t>(end - data_.get()); }
  void append(std::string_view s) {
    char* p = reserve(s.size());
    std::memcpy(p, s.data(), s.size());
    commit(p + s.size());
  }
  const char* data() const { return data_.get(); }
  size_t size() const { return size_; }
  void clear() { size_ = 0; }

 private:
  void grow(size_t more) {
    const size_t capacity = std::max({size_ + more, 2 * capacity_, size_t{1} << 16});
    auto data = std::make_unique_for_overwrite<char[]>(capacity);
    if (size_ > 0) std::memcpy(data.get(), data_.get(), size_);
    data_ = std::move(data);
    capacity_ = capacity;
  }

  std::unique_ptr<char[]> data_;
  size_t size_ = 0, capacity_ = 0;
};

// Field writers: each writes at p and returns the end. A line reserves
// kLineFixed bytes for its fixed text and numbers plus its strings' sizes;
// padding and hex numbers write a whole 16-byte block and keep what they need
// (the next field overwrites the rest), which is why kLineFixed leaves kPad
// bytes spare.
constexpr size_t kLineFixed = 384;
constexpr unsigned kPad = 16;
constexpr char kSpaces[kPad + 1] = "                ";
constexpr char kZeros[kPad + 1] = "0000000000000000";

template <size_t N>
[[gnu::always_inline]] inline char* put(char* p, const char (&literal)[N]) {
  std::memcpy(p, literal, N - 1);
  return p + N - 1;
}

// Names are short: up to 32 bytes go as two fixed-size copies that may
// overlap (never reading outside `s`), longer ones through memcpy.
[[gnu::always_inline]] inline char* put(char* p, std::string_view s) {
  const size_t n = s.size();
  const char* src = s.data();
  if (n >= 16 && n <= 32) {
    std::memcpy(p, src, 16);
    std::memcpy(p + n - 16, src + n - 16, 16);
  } else if (n >= 8 && n < 16) {
    std::memcpy(p, src, 8);
    std::memcpy(p + n - 8, src + n - 8, 8);
  } else if (n >= 4 && n < 8) {
    std::memcpy(p, src, 4);
    std::memcpy(p + n - 4, src + n - 4, 4);
  } else if (n > 0 && n < 4) {
    p[0] = src[0];
    p[n / 2] = src[n / 2];
    p[n - 1] = src[n - 1];
  } else if (n > 32) {
    std::memcpy(p, src, n);
  }
  return p + n;
}

// `n` (<= kPad) copies of `fill` (' ' or '0').
[[gnu::always_inline]] inline char* put_pad(char* p, unsigned n, char fill) {
  std::memcpy(p, fill == '0' ? kZeros : kSpaces, kPad);
  return p + n;
}

[[gnu::always_inline]] inline unsigned decimal_digits(uint64_t v) {
  unsigned n = 1;
  for (;;) {
    if (v < 10) return n;
    if (v < 100) return n + 1;
    if (v < 1000) return n + 2;
    if (v < 10000) return n + 3;
    v /= 10000;
    n += 4;
  }
}

// The `n` decimal digits of `v` at p, two at a time from the right.
[[gnu::always_inline]] inline char* put_digits(char* p, uint64_t v, unsigned n) {
  static constexpr char kPairs[] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
      "8081828384858687888990919293949596979899";
  char* end = p + n;
  char* q = end;
  while (v >= 100) {
    q -= 2;
    std::memcpy(q, kPairs + 2 * (v % 100), 2);
    v /= 100;
  }
  if (v >= 10) {
    q -= 2;
    std::memcpy(q, kPairs + 2 * v, 2);
  } else {
    *--q = static_cast<char>('0' + v);
  }
  return end;
}

// `v` in decimal, padded with `fill` on the left to `width` <= kPad (right
// alignment), or with spaces on the right when `left`.
[[gnu::always_inline]] inline char* put_uint(char* p, uint64_t v, unsigned width = 0,
                                             char fill = ' ', bool left = false) {
  const unsigned n = decimal_digits(v);
  if (!left && n < width) p = put_pad(p, width - n, fill);
  p = put_digits(p, v, n);
  if (left && n < width) p = put_pad(p, width - n, ' ');
  return p;
}

// The 8 nibbles of `x` as 8 hex digits, most significant first in memory
// order: nibbles spread one per byte, turned to ASCII a word at a time.
inline uint64_t hex_digits8(uint32_t x) {
  uint64_t y = x;
  y = (y | (y << 16)) & 0x0000FFFF0000FFFFull;
  y = (y | (y << 8)) & 0x00FF00FF00FF00FFull;
  y = (y | (y << 4)) & 0x0F0F0F0F0F0F0F0Full;  // byte i holds nibble i
  // 1 in the bytes whose nibble is 10..15 (no byte carries into the next).
  const uint64_t letters = ((y + 0x0606060606060606ull) >> 4) & 0x0101010101010101ull;
  y += 0x3030303030303030ull + letters * ('a' - '0' - 10);
  return __builtin_bswap64(y);
}

// `v` in lowercase hex, padded with spaces on the left to `width` <= kPad.
// Writes 8 or 16 bytes whatever the length (the next field overwrites the rest).
// The 16 digits are shifted into place in registers: copying them out of a
// stack array at a varying offset stalled on store forwarding.
[[gnu::always_inline]] inline char* put_hex(char* p, uint64_t v, unsigned width = 0) {
  const unsigned n = v == 0 ? 1 : (static_cast<unsigned>(std::bit_width(v)) + 3) / 4;
  if (n < width) p = put_pad(p, width - n, ' ');
  static_assert(std::endian::native == std::endian::little);
  if (n <= 8) {  // offsets: the low half's digits are all there is
    const uint64_t shown = hex_digits8(static_cast<uint32_t>(v)) >> (8 * (8 - n));
    std::memcpy(p, &shown, 8);
    return p + n;
  }
  // Byte i of `digits` is the i-th of the 16 digits in memory order.
  const unsigned __int128 digits =
      static_cast<unsigned __int128>(hex_digits8(static_cast<uint32_t>(v))) << 64 |
      hex_digits8(static_cast<uint32_t>(v >> 32));
  const unsigned __int128 shown = digits >> (8 * (16 - n));
  std::memcpy(p, &shown, 16);
  return p + n;
}

// 64 bytes as four 16-byte moves (a 64-byte memcpy became `rep movs`, slow to
// start for a copy this short).
[[gnu::always_inline]] inline void copy64(char* dst, const char* src) {
  for (int i = 0; i < 4; i++) std::memcpy(dst + 16 * i, src + 16 * i, 16);
}

bool is_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// A JSON string as nlohmann::json dumps it. The common case (printable ASCII,
// nothing to escape) is copied; anything else goes through the library.
// Invalid UTF-8 becomes U+FFFD: the kernel cuts a COMM at 15 bytes, possibly
// inside a character (the library's default throws, which aborted script).
class JsonString {
 public:
  explicit JsonString(std::string_view s) : plain_(s) {
    const bool plain = std::all_of(
        s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
    if (!plain) {
      escaped_ = nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      plain_ = {};
    }
  }
  // Bytes put() writes at most.
  size_t size() const { return escaped_.empty() ? plain_.size() + 2 : escaped_.size(); }
  char* put(char* p) const {
    if (!escaped_.empty()) return report::put(p, escaped_);
    *p++ = '"';
    p = report::put(p, plain_);
    *p++ = '"';
    return p;
  }

 private:
  std::string_view plain_;
  std::string escaped_;  // empty when plain
};

// The leaf of a sample without frames.
const symbols::Frame kNoFrame{};

// A formatting thread's state from line to line. Consecutive samples mostly
// repeat their thread and second, so the text of those fields is kept.
struct LineScratch {
  std::vector<SymbolizedFrame> frames;
  perf::Sample parsed;
  // "{comm:>16} {pid:>7}/{tid:<7} [{cpu:03}] " as last written on each CPU
  // (time order interleaves the CPUs), for that pid, tid and cpu, while the
  // thread's comm is the one written: times [comm_from, comm_to).
  struct Thread {
    uint64_t comm_from = 0, comm_to = 0;
    uint32_t pid = 0, tid = 0, cpu = 0;
    size_t size = 0;  // 0: none kept
    char text[64] = {};
  };
  std::array<Thread, 16> threads;
  // "{seconds}." as last written.
  struct {
    uint64_t seconds = UINT64_MAX;
    size_t size = 0;
    char text[24] = {};
  } second;
  // "{ip:16x} {sym}+0x{off} ({dso})\n" of kernel-code leaves (BPF programs
  // among them) as last written per ip (direct-mapped), with the times
  // [from, to) the symbolizer's answer at that ip holds for.
  struct Tail {
    uint64_t ip = 0, from = 0, to = 0;
    uint32_t size = 0;  // 0: none kept
    char text[100];
  };
  static constexpr size_t kTails = 1024;
  std::vector<Tail> tails = std::vector<Tail>(kTails);
};

// Whether `ip` has an offset into a symbol of `leaf` to print.
bool offset_known(const symbols::Frame& leaf, uint64_t ip) {
  return leaf.kind != symbols::FrameKind::kUnknown && leaf.unknown == symbols::Unknown::kNone &&
         leaf.symbol_start <= ip;
}

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

void format_sample(const Session& session, const OrderedSample& ref, ScriptFormat format,
                   LineScratch& scratch, TextBuffer& out) {
  std::vector<SymbolizedFrame>& frames = scratch.frames;
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
  if (format == ScriptFormat::kJson) {
    const std::string_view comm = sym.comm(sample->pid, sample->tid, sample->time);
    symbolize_sample(sym, *sample, ref.record.cpumode(), false, frames);
    const symbols::Frame& leaf = frames.empty() ? kNoFrame : frames.front().frame;
    const uint64_t ip = frames.empty() ? sample->ip : frames.front().ip;
    const uint64_t off = offset_known(leaf, ip) ? ip - leaf.symbol_start : 0;
    // {"comm":..,"pid":..,"tid":..,"cpu":..,"time":..,"period":..,"ip":"0x..",
    //  "sym":..,"off":..,"dso":..[,"bpf_prog_id":..,"bpf_prog":..]}, as
    // nlohmann::ordered_json dumps it.
    const JsonString comm_json(comm), sym_json(leaf.symbol), dso_json(leaf.dso);
    const symbols::BpfProgram* prog =
        leaf.bpf_program != 0 ? &sym.bpf_programs()[leaf.bpf_program - 1] : nullptr;
    std::optional<JsonString> prog_json;
    if (prog != nullptr) prog_json.emplace(prog->name);
    char* p = out.reserve(kLineFixed + comm_json.size() + sym_json.size() + dso_json.size() +
                          (prog_json ? prog_json->size() : 0));
    p = put(p, "{\"comm\":");
    p = comm_json.put(p);
    p = put(p, ",\"pid\":");
    p = put_uint(p, sample->pid);
    p = put(p, ",\"tid\":");
    p = put_uint(p, sample->tid);
    p = put(p, ",\"cpu\":");
    p = put_uint(p, sample->cpu);
    p = put(p, ",\"time\":");
    p = put_uint(p, sample->time);
    p = put(p, ",\"period\":");
    p = put_uint(p, sample->period);
    p = put(p, ",\"ip\":\"0x");
    p = put_hex(p, ip);
    p = put(p, "\",\"sym\":");
    p = sym_json.put(p);
    p = put(p, ",\"off\":");
    p = put_uint(p, off);
    p = put(p, ",\"dso\":");
    p = dso_json.put(p);
    if (prog != nullptr) {
      // Names repeat across program instances (same code, same tag): the id
      // says which instance ran.
      p = put(p, ",\"bpf_prog_id\":");
      p = put_uint(p, prog->id);
      p = put(p, ",\"bpf_prog\":");
      p = prog_json->put(p);
    }
    p = put(p, "}\n");
    out.commit(p);
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
  if (!kept) comm = sym.comm(sample->pid, sample->tid, time, comm_holds);
  const bool ascii = kept || is_ascii(comm);
  if (!ascii) out.append(fmt::format("{:>16}", comm));
  // The leaf: kernel code (BPF programs among it) from the tail kept for its
  // ip while the symbolizer's answer there holds, anything else looked up.
  LineScratch::Tail* tail = nullptr;
  bool tail_kept = false;
  const symbols::Frame* leaf = &kNoFrame;
  uint64_t ip = sample->ip;
  symbols::Frame kernel_leaf;
  if (sample->ip != 0 && symbols::Symbolizer::looks_up_kernel(
                             sample->ip, ref.record.cpumode() == perf::kMiscKernel)) {
    tail = &scratch.tails[((ip ^ (ip >> 11)) * 0x9e3779b97f4a7c15ULL) >> 54];
    static_assert(LineScratch::kTails == 1024);  // the top 10 bits pick the slot
    tail_kept = tail->size != 0 && tail->ip == ip && time >= tail->from && time < tail->to;
    if (!tail_kept) {
      symbols::Symbolizer::Holds holds;
      kernel_leaf = sym.lookup_kernel(ip, time, holds);
      leaf = &kernel_leaf;
      // Its text is written below, if it fits (not zeroed: only `size` bytes count).
      tail->ip = ip;
      tail->from = holds.from;
      tail->to = holds.to;
      tail->size = 0;
    }
  } else {
    symbolize_sample(sym, *sample, ref.record.cpumode(), false, frames);
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
    p = put_uint(p, sample->pid, 7);
    p = put(p, "/");
    p = put_uint(p, sample->tid, 7, ' ', true);
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

// The walk (the caller's thread) fills batches; worker threads format them;
// the walk writes each batch's text, in order, before it refills its slot.
// So walking, formatting and writing overlap, and every buffer keeps its
// capacity from batch to batch.
class Pipeline {
 public:
  Pipeline(const Session& session, const ScriptOptions& options, std::FILE* out, unsigned workers)
      : session_(session), format_(options.format), out_(out), slots_(workers + 2) {
    for (Slot& s : slots_) s.texts.resize(workers);
    for (unsigned i = 0; i < workers; i++) workers_.emplace_back([this] { work(); });
  }
  ~Pipeline() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Copies the batch (its views end with the walk's callback) into the next
  // slot, after writing what that slot held.
  Status submit(std::span<const OrderedSample> batch);
  // Writes every batch still in flight, in order.
  Status finish();

 private:
  struct Slot {
    RecordStore bytes;
    std::vector<OrderedSample> samples;
    std::vector<TextBuffer> texts;   // one per part
    size_t parts = 0;                // parts of samples handed out; 0 = slot empty
    size_t parts_done = 0;           // guarded by mu_
  };
  struct Task {
    Slot* slot;
    size_t part;
  };

  void work();
  // Waits for the slot's parts, writes their text and empties the slot.
  Status drain(Slot& slot);

  const Session& session_;
  const ScriptFormat format_;
  std::FILE* const out_;
  std::vector<Slot> slots_;
  size_t next_ = 0;  // the slot submit() fills next (slots are used in a ring)
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Task> tasks_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

Status Pipeline::submit(std::span<const OrderedSample> batch) {
  if (batch.empty()) return ok_status();
  Slot& slot = slots_[next_];
  next_ = (next_ + 1) % slots_.size();
  BPFPROF_TRY(drain(slot));
  slot.bytes.clear();
  slot.samples.clear();
  for (const OrderedSample& s : batch) slot.bytes.append(s.record.bytes);
  size_t at = 0;
  for (const OrderedSample& s : batch) {
    OrderedSample copy = s;
    copy.record.bytes = Bytes(slot.bytes.at(at), s.record.bytes.size());
    at += s.record.bytes.size();
    slot.samples.push_back(copy);
  }
  const size_t parts = std::min(slot.texts.size(), batch.size());
  {
    std::lock_guard lock(mu_);
    slot.parts = parts;
    slot.parts_done = 0;
    for (size_t p = 0; p < parts; p++) tasks_.push_back(Task{&slot, p});
  }
  work_cv_.notify_all();
  return ok_status();
}

Status Pipeline::drain(Slot& slot) {
  if (slot.parts == 0) return ok_status();
  {
    std::unique_lock lock(mu_);
    done_cv_.wait(lock, [&] { return slot.parts_done == slot.parts; });
  }
  const size_t parts = slot.parts;
  slot.parts = 0;
  for (size_t p = 0; p < parts; p++) {
    const TextBuffer& text = slot.texts[p];
    if (std::fwrite(text.data(), 1, text.size(), out_) != text.size()) {
      return make_sys_error("writing the script output", errno);
    }
  }
  return ok_status();
}

Status Pipeline::finish() {
  for (size_t i = 0; i < slots_.size(); i++) {
    BPFPROF_TRY(drain(slots_[next_]));
    next_ = (next_ + 1) % slots_.size();
  }
  return ok_status();
}

void Pipeline::work() {
  LineScratch scratch;
  for (;;) {
    Task task;
    {
      std::unique_lock lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, nothing left
      task = tasks_.front();
      tasks_.pop_front();
    }
    Slot& slot = *task.slot;
    const size_t n = slot.samples.size(), per = (n + slot.parts - 1) / slot.parts;
    const size_t begin = std::min(n, task.part * per), end = std::min(n, begin + per);
    TextBuffer& text = slot.texts[task.part];
    text.clear();
    for (size_t i = begin; i < end; i++) {
      format_sample(session_, slot.samples[i], format_, scratch, text);
    }
    {
      std::lock_guard lock(mu_);
      slot.parts_done++;
    }
    done_cv_.notify_all();
  }
}

// Windows of the time axis, each collected, sorted and formatted by one
// worker; the caller's thread writes their texts in window order. Windows are
// disjoint and in time order, so that is the order of a stable sort by time.
// At most slots_.size() windows are started and not yet written: memory is a
// few windows whatever the size of the file.
class WindowPipeline {
 public:
  WindowPipeline(const Session& session, ScriptFormat format, std::FILE* out,
                 std::vector<TimeWindow> windows, unsigned workers)
      : session_(session),
        format_(format),
        out_(out),
        windows_(std::move(windows)),
        slots_(size_t{workers} + 2) {
    for (unsigned i = 0; i < workers; i++) workers_.emplace_back([this] { work(); });
  }
  ~WindowPipeline() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }
  WindowPipeline(const WindowPipeline&) = delete;
  WindowPipeline& operator=(const WindowPipeline&) = delete;

  // Writes every window's text, in order. Errors: a window's range failing
  // to read (after the windows before it were written), or writing.
  Status run();

 private:
  struct Slot {
    TextBuffer text;
    Status status = ok_status();
    bool done = false;  // guarded by mu_
  };

  void work();

  const Session& session_;
  const ScriptFormat format_;
  std::FILE* const out_;
  const std::vector<TimeWindow> windows_;
  std::vector<Slot> slots_;  // window k uses slot k % size
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  size_t next_ = 0;     // the window a worker takes next; guarded by mu_
  size_t written_ = 0;  // windows written; guarded by mu_
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

Status WindowPipeline::run() {
  for (size_t k = 0; k < windows_.size(); k++) {
    Slot& slot = slots_[k % slots_.size()];
    {
      std::unique_lock lock(mu_);
      done_cv_.wait(lock, [&] { return slot.done; });
    }
    if (!slot.status.ok()) return slot.status;
    if (std::fwrite(slot.text.data(), 1, slot.text.size(), out_) != slot.text.size()) {
      return make_sys_error("writing the script output", errno);
    }
    // Windows were read through the file's mapping; the ones still to come
    // start at or after the next one's begin.
    const perfdata::FileReader& reader = session_.reader();
    const uint64_t next =
        k + 1 < windows_.size() ? windows_[k + 1].begin : reader.data_offset() + reader.data_size();
    reader.drop_pages(windows_[k].begin, next);
    {
      std::lock_guard lock(mu_);
      slot.done = false;
      written_++;
    }
    work_cv_.notify_all();
  }
  return ok_status();
}

void WindowPipeline::work() {
  WindowSamples samples;
  LineScratch scratch;
  for (;;) {
    size_t k;
    {
      std::unique_lock lock(mu_);
      work_cv_.wait(lock, [&] {
        return stop_ || (next_ < windows_.size() && next_ < written_ + slots_.size());
      });
      if (stop_) return;
      k = next_++;
    }
    Slot& slot = slots_[k % slots_.size()];
    slot.text.clear();
    slot.status = samples.collect(session_, windows_[k]);
    if (slot.status.ok()) {
      for (const OrderedSample& s : samples.samples()) {
        format_sample(session_, s, format_, scratch, slot.text);
      }
    }
    {
      std::lock_guard lock(mu_);
      slot.done = true;
    }
    done_cv_.notify_one();
  }
}

}  // namespace

Status write_script(const Session& session, const ScriptOptions& options, std::FILE* out) {
  const unsigned threads = options.threads ? options.threads
                                           : std::max(1u, std::thread::hardware_concurrency());
  const uint64_t window_bytes =
      std::clamp(session.reader().data_size() / kWindowsPerFile, kMinWindowBytes, kMaxWindowBytes);
  std::vector<TimeWindow> windows = plan_time_windows(session, window_bytes);
  Status written = ok_status();
  if (!windows.empty()) {
    written = WindowPipeline(session, options.format, out, std::move(windows), threads).run();
  } else {
    Pipeline pipeline(session, options, out, threads);
    written = for_each_in_time_order(session, kBatch, [&](std::span<const OrderedSample> batch) {
      return pipeline.submit(batch);
    });
    if (written.ok()) written = pipeline.finish();
  }
  if (!written.ok()) return written;
  if (std::fflush(out) != 0) return make_sys_error("writing the script output", errno);
  return ok_status();
}

}  // namespace bpfprof::report
