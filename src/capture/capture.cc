// SPDX-License-Identifier: Apache-2.0
#include "capture/capture.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <cinttypes>
#include <cstdio>
#include <vector>

#include "base/text_file.h"
#include "base/unique_fd.h"
#include "capture/bpf/capture_abi.h"
#include "capture/capture_object.h"
#include "perf/tracefs.h"

namespace bpfprof::capture {
namespace {

Result<uint64_t> read_id(const std::string& path) {
  auto text = read_text_file(path);
  uint64_t id = 0;
  if (!text.ok() || std::sscanf(text->c_str(), "%" SCNu64, &id) != 1) {
    return make_error(Errc::kNotFound, path + ": no tracepoint id");
  }
  return id;
}

// libbpf's messages while loading: kept (the last warning becomes part of
// the reason capture cannot run), never printed.
thread_local std::string* g_libbpf_log = nullptr;

int keep_libbpf_message(enum libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG || !g_libbpf_log) return 0;
  char line[512];
  int n = std::vsnprintf(line, sizeof line, format, args);
  if (n > 0) {
    std::string s(line);
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    if (!s.empty()) *g_libbpf_log = s;
  }
  return 0;
}

}  // namespace

Result<uint64_t> find_bpf_exit_tracepoint() {
  Result<uint64_t> result = make_error(Errc::kInternal, "tracefs was not read");
  BPFPROF_TRY(perf::with_tracefs(
      [&](const std::string& dir) { result = read_id(dir + "/events/syscalls/sys_exit_bpf/id"); }));
  return result;
}

struct Capture::State {
  bpf_object* object = nullptr;
  std::vector<bpf_link*> links;
  ring_buffer* ring = nullptr;
  int counters_fd = -1;

  ~State() {
    for (bpf_link* l : links) bpf_link__destroy(l);
    if (ring) free_ring();
    bpf_object__close(object);
  }
  void free_ring() {
    ring_buffer__free(ring);
    ring = nullptr;
  }
};

namespace {

int ring_callback(void* ctx, void* data, size_t size) {
  return static_cast<Capture*>(ctx)->on_record(
      std::span<const std::byte>(static_cast<const std::byte*>(data), size));
}

}  // namespace

Capture::Capture() : state_(std::make_unique<State>()) {}

Capture::~Capture() { stop(); }

Result<std::unique_ptr<Capture>> Capture::start(const CaptureConfig& config) {
  std::unique_ptr<Capture> c(new Capture());
  State& s = *c->state_;
  std::string libbpf_said;
  g_libbpf_log = &libbpf_said;
  libbpf_print_fn_t previous = libbpf_set_print(keep_libbpf_message);
  struct Restore {
    libbpf_print_fn_t fn;
    ~Restore() {
      libbpf_set_print(fn);
      g_libbpf_log = nullptr;
    }
  } restore{previous};
  auto failed = [&](const std::string& what, int err) {
    Error e = make_sys_error(what, err);
    if (!libbpf_said.empty()) e.message += " (libbpf: " + libbpf_said + ")";
    return e;
  };

  BPFPROF_ASSIGN_OR_RETURN(const uint64_t exit_bpf, find_bpf_exit_tracepoint());

  const std::span<const unsigned char> obj = capture_object();
  LIBBPF_OPTS(bpf_object_open_opts, open_opts, .object_name = "bpfprof_capture");
  s.object = bpf_object__open_mem(obj.data(), obj.size(), &open_opts);
  if (!s.object) {
    const int err = errno;
    s.object = nullptr;
    return failed("opening the capture object", err);
  }
  bpf_map* events = bpf_object__find_map_by_name(s.object, "events");
  bpf_map* missed = bpf_object__find_map_by_name(s.object, "missed");
  bpf_map* counters = bpf_object__find_map_by_name(s.object, "counters");
  bpf_map* rodata = bpf_object__find_map_by_name(s.object, ".rodata");
  size_t rodata_size = 0;
  if (rodata) (void)bpf_map__initial_value(rodata, &rodata_size);
  if (!events || !missed || !counters || rodata_size != sizeof(uint64_t)) {
    return make_error(Errc::kInternal, "capture object without its maps");
  }
  if (int rc = bpf_map__set_max_entries(events, config.ring_bytes); rc < 0) {
    return failed("sizing the capture ring", -rc);
  }
  // A program's last record wakes us only from half a ring on.
  const uint64_t half = config.ring_bytes / 2;
  if (int rc = bpf_map__set_initial_value(rodata, &half, sizeof half); rc < 0) {
    return failed("setting the capture's wake-up mark", -rc);
  }
  if (int rc = bpf_object__load(s.object); rc < 0) {
    return failed("loading the capture programs", -rc);
  }
  s.counters_fd = bpf_map__fd(counters);

  // One event (CPU 0, every task) carries the program; it runs wherever
  // the tracepoint fires. The event itself records nothing.
  bpf_program* prog = bpf_object__find_program_by_name(s.object, "capture_exit");
  if (!prog) return make_error(Errc::kInternal, "capture object without capture_exit");
  perf_event_attr attr{};
  attr.type = PERF_TYPE_TRACEPOINT;
  attr.size = sizeof attr;
  attr.config = exit_bpf;
  attr.sample_period = 1;
  UniqueFd pfd(
      static_cast<int>(::syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC)));
  if (!pfd.valid()) return failed("opening the tracepoint for capture_exit", errno);
  bpf_link* link = bpf_program__attach_perf_event(prog, pfd.get());
  if (!link) return failed("attaching capture_exit", errno);
  pfd.release();  // the link owns it now
  s.links.push_back(link);
  s.ring = ring_buffer__new(bpf_map__fd(events), ring_callback, c.get(), nullptr);
  if (!s.ring) return failed("mapping the capture ring", errno);
  if (int rc = ring_buffer__add(s.ring, bpf_map__fd(missed), ring_callback, c.get()); rc < 0) {
    return failed("mapping the capture's missed ring", -rc);
  }
  return c;
}

int Capture::on_record(std::span<const std::byte> rec) {
  records_.add(rec);
  return 0;
}

int Capture::wake_fd() const { return state_->ring ? ring_buffer__epoll_fd(state_->ring) : -1; }

Status Capture::consume() {
  if (!state_->ring) return ok_status();
  int rc = ring_buffer__consume(state_->ring);
  if (rc < 0) return make_sys_error("consuming the capture ring", -rc);
  return ok_status();
}

CaptureCounters Capture::counters() const {
  if (stopped_ || state_->counters_fd < 0) return final_counters_;
  const int ncpu = libbpf_num_possible_cpus();
  CaptureCounters sum;
  if (ncpu <= 0) return sum;
  std::vector<capture_counters> per_cpu(static_cast<size_t>(ncpu));
  uint32_t zero = 0;
  if (bpf_map_lookup_elem(state_->counters_fd, &zero, per_cpu.data()) != 0) return sum;
  for (const auto& v : per_cpu) {
    sum.captured += v.captured;
    sum.incomplete += v.incomplete;
    sum.lost_records += v.lost_records;
    sum.not_program += v.not_program;
    sum.read_errors += v.read_errors;
    sum.links += v.links;
    sum.links_missed += v.links_missed;
  }
  return sum;
}

void Capture::stop() {
  if (stopped_) return;
  State& s = *state_;
  for (bpf_link* l : s.links) bpf_link__destroy(l);
  s.links.clear();
  (void)consume();
  final_counters_ = counters();
  stopped_ = true;
  records_.finish();  // loads whose last record never came: not captured
  if (s.ring) s.free_ring();
  bpf_object__close(s.object);
  s.object = nullptr;
  s.counters_fd = -1;
}

}  // namespace bpfprof::capture
