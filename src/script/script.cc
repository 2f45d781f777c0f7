// SPDX-License-Identifier: Apache-2.0
// The formatting pipelines: samples reach the worker threads in batches or
// time windows, the threads format their lines (line_format.h), and the
// caller's thread writes the texts in order.
#include "script/script.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <deque>
#include <iterator>
#include <string_view>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "analysis/time_order.h"
#include "script/line_format.h"
#include "script/text_buffer.h"
#include "script/worker_threads.h"

namespace bpfprof::script {
namespace {

// Samples per batch: the unit the walk hands to the formatting threads.
// Memory is a few batches (record copies and text) however long the file.
constexpr size_t kBatch = 1 << 13;

// Time windows (plan_time_windows) own about 1/512 of the data section each,
// within these bounds: enough windows to keep every thread busy and the
// windows' overlap (a couple of rounds) small, few enough bytes per window
// that a window's text (~5x its bytes with callchains) stays a few MiB:
// large texts are written to memory no cache holds, and 128 windows of at
// least 1 MiB cost 11-13% more CPU and 33 MB more memory on a 150 MB file.
constexpr uint64_t kWindowsPerFile = 512;
constexpr uint64_t kMinWindowBytes = 1 << 19, kMaxWindowBytes = 8 << 20;

// The walk (the caller's thread) fills batches; worker threads format them;
// the walk writes each batch's text, in order, before it refills its slot.
// So walking, formatting and writing overlap, and every buffer keeps its
// capacity from batch to batch.
class BatchPipeline {
 public:
  BatchPipeline(const analysis::Session& session, const ScriptOptions& options, std::FILE* out,
                unsigned workers)
      : session_(session),
        options_(options),
        out_(out),
        slots_(make_slots(workers)),
        workers_(workers, [this] { work(); }) {}

  // Copies the batch (its views end with the walk's callback) into the next
  // slot, after writing what that slot held.
  Status submit(std::span<const analysis::OrderedSample> batch);
  // Writes every batch still in flight, in order.
  Status finish();

 private:
  struct Slot {
    analysis::RecordStore bytes;
    std::vector<analysis::OrderedSample> samples;
    std::vector<TextBuffer> texts;   // one per part
    size_t parts = 0;                // parts of samples handed out; 0 = slot empty
    size_t parts_done = 0;           // guarded by workers_.mutex()
  };
  struct Task {
    Slot* slot;
    size_t part;
  };

  // A ring of slots for `workers` threads: one per thread and two more (one
  // being filled, one being written).
  static std::vector<Slot> make_slots(unsigned workers) {
    std::vector<Slot> slots(workers + 2);
    for (Slot& s : slots) s.texts.resize(workers);
    return slots;
  }
  void work();
  // Waits for the slot's parts, writes their text and empties the slot.
  Status drain(Slot& slot);

  const analysis::Session& session_;
  const ScriptOptions& options_;
  std::FILE* const out_;
  std::vector<Slot> slots_;
  size_t next_ = 0;  // the slot submit() fills next (slots are used in a ring)
  std::deque<Task> tasks_;  // guarded by workers_.mutex()
  WorkerThreads workers_;
};

Status BatchPipeline::submit(std::span<const analysis::OrderedSample> batch) {
  if (batch.empty()) return ok_status();
  Slot& slot = slots_[next_];
  next_ = (next_ + 1) % slots_.size();
  BPFPROF_TRY(drain(slot));
  slot.bytes.clear();
  slot.samples.clear();
  for (const analysis::OrderedSample& s : batch) slot.bytes.append(s.record.bytes);
  size_t at = 0;
  for (const analysis::OrderedSample& s : batch) {
    analysis::OrderedSample copy = s;
    copy.record.bytes = Bytes(slot.bytes.at(at), s.record.bytes.size());
    at += s.record.bytes.size();
    slot.samples.push_back(copy);
  }
  const size_t parts = std::min(slot.texts.size(), batch.size());
  {
    std::lock_guard lock(workers_.mutex());
    slot.parts = parts;
    slot.parts_done = 0;
    for (size_t p = 0; p < parts; p++) tasks_.push_back(Task{&slot, p});
  }
  workers_.work_added();
  return ok_status();
}

Status BatchPipeline::drain(Slot& slot) {
  if (slot.parts == 0) return ok_status();
  {
    std::unique_lock lock(workers_.mutex());
    workers_.wait_until_done(lock, [&] { return slot.parts_done == slot.parts; });
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

Status BatchPipeline::finish() {
  for (size_t i = 0; i < slots_.size(); i++) {
    BPFPROF_TRY(drain(slots_[next_]));
    next_ = (next_ + 1) % slots_.size();
  }
  return ok_status();
}

void BatchPipeline::work() {
  LineScratch scratch;
  for (;;) {
    Task task;
    {
      std::unique_lock lock(workers_.mutex());
      if (!workers_.wait_for_work(lock, [&] { return !tasks_.empty(); })) return;
      task = tasks_.front();
      tasks_.pop_front();
    }
    Slot& slot = *task.slot;
    const size_t n = slot.samples.size(), per = (n + slot.parts - 1) / slot.parts;
    const size_t begin = std::min(n, task.part * per), end = std::min(n, begin + per);
    TextBuffer& text = slot.texts[task.part];
    text.clear();
    for (size_t i = begin; i < end; i++) {
      format_sample(session_, slot.samples[i], options_, scratch, text);
    }
    {
      std::lock_guard lock(workers_.mutex());
      slot.parts_done++;
    }
    workers_.work_done();
  }
}

// Windows of the time axis, each collected, sorted and formatted by one
// worker; the caller's thread writes their texts in window order. Windows are
// disjoint and in time order, so that is the order of a stable sort by time.
// At most slots_.size() windows are started and not yet written: memory is a
// few windows whatever the size of the file.
class WindowPipeline {
 public:
  WindowPipeline(const analysis::Session& session, const ScriptOptions& options, std::FILE* out,
                 std::vector<analysis::TimeWindow> windows, unsigned workers)
      : session_(session),
        options_(options),
        out_(out),
        windows_(std::move(windows)),
        slots_(size_t{workers} + 2),
        workers_(workers, [this] { work(); }) {}

  // Writes every window's text, in order. Errors: a window's range failing
  // to read (after the windows before it were written), or writing.
  Status run();

 private:
  struct Slot {
    TextBuffer text;
    Status status = ok_status();
    bool done = false;  // guarded by workers_.mutex()
  };

  void work();

  const analysis::Session& session_;
  const ScriptOptions& options_;
  std::FILE* const out_;
  const std::vector<analysis::TimeWindow> windows_;
  std::vector<Slot> slots_;  // window k uses slot k % size
  size_t next_ = 0;     // the window a worker takes next; guarded by workers_.mutex()
  size_t written_ = 0;  // windows written; guarded by workers_.mutex()
  WorkerThreads workers_;
};

Status WindowPipeline::run() {
  for (size_t k = 0; k < windows_.size(); k++) {
    Slot& slot = slots_[k % slots_.size()];
    {
      std::unique_lock lock(workers_.mutex());
      workers_.wait_until_done(lock, [&] { return slot.done; });
    }
    if (!slot.status.ok()) return slot.status;
    // An empty chunk has no buffer: fwrite from null is undefined even for 0 bytes.
    if (slot.text.size() > 0 &&
        std::fwrite(slot.text.data(), 1, slot.text.size(), out_) != slot.text.size()) {
      return make_sys_error("writing the script output", errno);
    }
    {
      std::lock_guard lock(workers_.mutex());
      slot.done = false;
      written_++;
    }
    workers_.work_added();
  }
  return ok_status();
}

void WindowPipeline::work() {
  analysis::WindowSamples samples;
  LineScratch scratch;
  for (;;) {
    size_t k;
    {
      std::unique_lock lock(workers_.mutex());
      if (!workers_.wait_for_work(lock, [&] {
            return next_ < windows_.size() && next_ < written_ + slots_.size();
          })) {
        return;
      }
      k = next_++;
    }
    Slot& slot = slots_[k % slots_.size()];
    slot.text.clear();
    slot.status = samples.collect(session_, windows_[k]);
    if (slot.status.ok()) {
      for (const analysis::OrderedSample& s : samples.samples()) {
        format_sample(session_, s, options_, scratch, slot.text);
      }
    }
    {
      std::lock_guard lock(workers_.mutex());
      slot.done = true;
    }
    workers_.work_done();
  }
}

// A pipe's buffer, when `out` is one, made kPipeBytes: at the default 64 KiB
// the reader (`| wc -c`, `| grep`) is woken for every 64 KiB, ~1,500 times
// for a 30 s recording's 82 MB of lines, and each side waits for the other
// as often. Advice only: where the system refuses (a user over the pipe
// quota) the output is the same, written as before.
constexpr int kPipeBytes = 1 << 20;
void widen_pipe(std::FILE* out) {
  const int fd = ::fileno(out);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) return;
  if (::fcntl(fd, F_GETPIPE_SZ) < kPipeBytes) (void)::fcntl(fd, F_SETPIPE_SZ, kPipeBytes);
}

}  // namespace

Result<uint32_t> parse_fields(std::string_view list) {
  static constexpr std::pair<std::string_view, ScriptField> kNames[] = {
      {"comm", kFieldComm}, {"tid", kFieldTid},       {"pid", kFieldPid}, {"time", kFieldTime},
      {"cpu", kFieldCpu},   {"event", kFieldEvent},   {"ip", kFieldIp},   {"sym", kFieldSym},
      {"symoff", kFieldSymoff}, {"dso", kFieldDso}, {"period", kFieldPeriod},
  };
  uint32_t fields = 0;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (name.empty()) continue;
    const auto* it = std::find_if(std::begin(kNames), std::end(kNames),
                                  [&](const auto& n) { return n.first == name; });
    if (it == std::end(kNames)) {
      return make_error(Errc::kInvalidArgument,
                        "-F: unknown field '" + std::string(name) +
                            "' (known: comm, tid, pid, time, cpu, event, ip, sym, symoff, dso, period)");
    }
    fields |= it->second;
  }
  if (fields == 0) return make_error(Errc::kInvalidArgument, "-F: no field named");
  return fields;
}

bool has_callchains(const analysis::Session& session) {
  const auto& attrs = session.reader().attrs();
  return std::any_of(attrs.begin(), attrs.end(), [](const perfdata::FileAttr& a) {
    return (a.attr.sample_type & PERF_SAMPLE_CALLCHAIN) != 0;
  });
}

Status write_script(const analysis::Session& session, const ScriptOptions& options,
                    std::FILE* out) {
  widen_pipe(out);
  const unsigned threads = options.threads ? options.threads
                                           : std::max(1u, std::thread::hardware_concurrency());
  const uint64_t window_bytes =
      std::clamp(session.reader().data_size() / kWindowsPerFile, kMinWindowBytes, kMaxWindowBytes);
  std::vector<analysis::TimeWindow> windows = analysis::plan_time_windows(session, window_bytes);
  Status written = ok_status();
  if (!windows.empty()) {
    written = WindowPipeline(session, options, out, std::move(windows), threads).run();
  } else {
    BatchPipeline pipeline(session, options, out, threads);
    written = analysis::for_each_in_time_order(
        session, kBatch,
        [&](std::span<const analysis::OrderedSample> batch) { return pipeline.submit(batch); });
    if (written.ok()) written = pipeline.finish();
  }
  if (!written.ok()) return written;
  if (std::fflush(out) != 0) return make_sys_error("writing the script output", errno);
  return ok_status();
}

}  // namespace bpfprof::script
