// SPDX-License-Identifier: Apache-2.0
#include "record/capture.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "record/bpf/capture_abi.h"
#include "record/capture_object.h"

namespace bpfprof::record {
namespace {

// Where tracefs may already be mounted, newest place first.
constexpr const char* kTracefsMounts[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};

// The most one array of one capture may grow to: far above any program
// (the kernel caps a program at 1M instructions), and a guard against a
// malformed record claiming an absurd offset.
constexpr uint64_t kMaxArrayBytes = 256u << 20;

Result<uint64_t> read_id(const std::string& path) {
  std::ifstream in(path);
  uint64_t id = 0;
  if (!(in >> id)) return make_error(Errc::kNotFound, path + ": no tracepoint id");
  return id;
}

Result<SyscallTracepointIds> read_ids(const std::string& tracefs) {
  SyscallTracepointIds ids;
  BPFPROF_ASSIGN_OR_RETURN(ids.enter_bpf, read_id(tracefs + "/events/syscalls/sys_enter_bpf/id"));
  BPFPROF_ASSIGN_OR_RETURN(ids.exit_bpf, read_id(tracefs + "/events/syscalls/sys_exit_bpf/id"));
  return ids;
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

template <class T>
bool read_pod(std::span<const std::byte> rec, T& out) {
  if (rec.size() < sizeof(T)) return false;
  std::memcpy(&out, rec.data(), sizeof(T));
  return true;
}

}  // namespace

Result<SyscallTracepointIds> find_bpf_syscall_tracepoints() {
  for (const char* dir : kTracefsMounts) {
    if (auto ids = read_ids(dir); ids.ok()) return ids;
  }
  // Not mounted: a thread of ours gets a mount namespace of its own (which
  // needs its own fs_struct too), makes every mount in it private so nothing
  // propagates back, mounts tracefs there and reads the ids. When the thread
  // exits, its namespace and the mount go with it.
  Result<SyscallTracepointIds> result = make_error(Errc::kInternal, "tracefs thread did not run");
  std::thread t([&result] {
    if (::unshare(CLONE_FS | CLONE_NEWNS) != 0) {
      result = make_sys_error("unshare(CLONE_NEWNS) to mount tracefs privately", errno);
      return;
    }
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      result = make_sys_error("making a private mount namespace", errno);
      return;
    }
    if (::mount("nodev", kTracefsMounts[0], "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                nullptr) != 0) {
      result = make_sys_error(std::string("mounting tracefs on ") + kTracefsMounts[0], errno);
      return;
    }
    result = read_ids(kTracefsMounts[0]);
  });
  t.join();
  return result;
}

struct Capture::State {
  bpf_object* object = nullptr;
  std::vector<bpf_link*> links;
  ring_buffer* ring = nullptr;
  int counters_fd = -1;

  // Programs and BTF whose records are arriving.
  struct Partial {
    std::vector<CapturedFunc> funcs;
    std::vector<std::byte> arrays[CAPTURE_NR_ARRAYS];
    uint64_t received[CAPTURE_NR_ARRAYS] = {};
  };
  std::map<uint32_t, Partial> partial;
  struct PartialBtf {
    std::vector<std::byte> data;
    uint64_t received = 0;
  };
  std::map<uint32_t, PartialBtf> partial_btf;

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

// The one place a capture becomes a bpf_prog_info entry: the fields the
// enricher's bpf_obj_get_info_by_fd would report, arrays as it stores them.
bpf::ProgInfo assemble_prog_info(const capture_prog& p, std::vector<CapturedFunc>& funcs,
                                 std::vector<std::byte>* arrays) {
  bpf::ProgInfo out;
  bpf_prog_info& i = out.info;
  i.type = p.type;
  i.id = p.hdr.id;
  std::memcpy(i.tag, p.tag, sizeof i.tag);
  std::memcpy(i.name, p.name, sizeof i.name);
  i.load_time = p.load_time;
  i.created_by_uid = p.created_by_uid;
  i.xlated_prog_len = p.xlated_prog_len;
  i.nr_map_ids = p.nr_map_ids;
  i.gpl_compatible = (p.flags & CAPTURE_GPL) ? 1 : 0;
  i.btf_id = p.btf_id;
  i.verified_insns = p.verified_insns;
  i.attach_btf_obj_id = p.attach_btf_obj_id;
  i.attach_btf_id = p.attach_btf_id;
  i.func_info_rec_size = sizeof(bpf_func_info);
  i.line_info_rec_size = sizeof(bpf_line_info);
  i.jited_line_info_rec_size = sizeof(uint64_t);

  auto take = [&](int array, size_t n) {
    std::vector<std::byte>& a = arrays[array];
    a.resize(n);
    return std::move(a);
  };
  std::vector<std::byte> image = take(CAPTURE_JITED_INSNS, p.sent[CAPTURE_JITED_INSNS]);
  out.jited_insns.resize(image.size());
  if (!image.empty()) std::memcpy(out.jited_insns.data(), image.data(), image.size());
  for (const CapturedFunc& f : funcs) {
    out.jited_ksyms.push_back(f.addr);
    out.jited_func_lens.push_back(f.len);
    out.prog_tags.push_back(f.tag);
  }
  out.func_info = take(CAPTURE_FUNC_INFO, p.sent[CAPTURE_FUNC_INFO]);
  out.line_info = take(CAPTURE_LINE_INFO, p.sent[CAPTURE_LINE_INFO]);
  std::vector<std::byte> jited_lines = take(CAPTURE_JITED_LINE_INFO, p.sent[CAPTURE_JITED_LINE_INFO]);
  out.jited_line_info.resize(jited_lines.size() / sizeof(uint64_t));
  if (!out.jited_line_info.empty()) {
    std::memcpy(out.jited_line_info.data(), jited_lines.data(),
                out.jited_line_info.size() * sizeof(uint64_t));
  }
  i.jited_prog_len = static_cast<uint32_t>(out.jited_insns.size());
  i.nr_jited_ksyms = static_cast<uint32_t>(out.jited_ksyms.size());
  i.nr_jited_func_lens = static_cast<uint32_t>(out.jited_func_lens.size());
  i.nr_prog_tags = static_cast<uint32_t>(out.prog_tags.size());
  i.nr_func_info = p.nr_func_info;
  i.nr_line_info = p.nr_line_info;
  i.nr_jited_line_info = p.nr_jited_line_info;
  return out;
}

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

  BPFPROF_ASSIGN_OR_RETURN(SyscallTracepointIds ids, find_bpf_syscall_tracepoints());

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

  struct Attach {
    const char* prog;
    uint64_t id;
  };
  for (const Attach& a : {Attach{"capture_enter", ids.enter_bpf}, Attach{"capture_exit", ids.exit_bpf}}) {
    bpf_program* prog = bpf_object__find_program_by_name(s.object, a.prog);
    if (!prog) return make_error(Errc::kInternal, std::string("capture object without ") + a.prog);
    perf_event_attr attr{};
    attr.type = PERF_TYPE_TRACEPOINT;
    attr.size = sizeof attr;
    attr.config = a.id;
    attr.sample_period = 1;
    // One event (CPU 0, every task) carries the program; it runs wherever
    // the tracepoint fires. The event itself records nothing.
    UniqueFd pfd(static_cast<int>(
        ::syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC)));
    if (!pfd.valid()) return failed(std::string("opening the tracepoint for ") + a.prog, errno);
    bpf_link* link = bpf_program__attach_perf_event(prog, pfd.get());
    if (!link) return failed(std::string("attaching ") + a.prog, errno);
    pfd.release();  // the link owns it now
    s.links.push_back(link);
  }
  s.ring = ring_buffer__new(bpf_map__fd(events), ring_callback, c.get(), nullptr);
  if (!s.ring) return failed("mapping the capture ring", errno);
  if (int rc = ring_buffer__add(s.ring, bpf_map__fd(missed), ring_callback, c.get()); rc < 0) {
    return failed("mapping the capture's missed ring", -rc);
  }
  return c;
}

int Capture::on_record(std::span<const std::byte> rec) {
  capture_header h{};
  if (!read_pod(rec, h)) {
    bad_records_++;
    return 0;
  }
  State& s = *state_;
  switch (h.kind) {
    case CAPTURE_FUNC: {
      capture_func f{};
      if (!read_pod(rec, f)) break;
      auto& funcs = s.partial[h.id].funcs;
      if (f.index != funcs.size()) break;  // pieces come in order on one CPU
      CapturedFunc out;
      out.addr = f.addr;
      out.len = f.jited_len;
      std::memcpy(out.tag.data(), f.tag, out.tag.size());
      funcs.push_back(out);
      return 0;
    }
    case CAPTURE_CHUNK: {
      capture_chunk c{};
      if (!read_pod(rec, c) || c.array >= CAPTURE_NR_ARRAYS || c.len > CAPTURE_CHUNK_MAX ||
          rec.size() < sizeof c + c.len || uint64_t{c.offset} + c.len > kMaxArrayBytes) {
        break;
      }
      const std::byte* data = rec.data() + sizeof c;
      std::vector<std::byte>* dst;
      uint64_t* received;
      if (c.array == CAPTURE_BTF) {
        auto& b = s.partial_btf[h.id];
        dst = &b.data;
        received = &b.received;
      } else {
        auto& p = s.partial[h.id];
        dst = &p.arrays[c.array];
        received = &p.received[c.array];
      }
      if (dst->size() < c.offset + c.len) dst->resize(c.offset + c.len);
      std::memcpy(dst->data() + c.offset, data, c.len);
      *received += c.len;
      return 0;
    }
    case CAPTURE_MISSED:
      missed_++;
      if (!captured_.count(h.id)) incomplete_.insert(h.id);
      return 0;
    case CAPTURE_PROG: {
      capture_prog p{};
      if (!read_pod(rec, p)) break;
      auto node = s.partial.extract(p.hdr.id);
      State::Partial part = node ? std::move(node.mapped()) : State::Partial{};
      bool whole = !(p.flags & CAPTURE_INCOMPLETE) && part.funcs.size() == p.nr_funcs;
      for (int a = 0; a < CAPTURE_BTF; a++) whole = whole && part.received[a] == p.sent[a];
      if (p.flags & CAPTURE_BTF_SENT) {
        auto btf = s.partial_btf.extract(p.btf_id);
        if (btf && btf.mapped().received == p.btf_size && btf.mapped().data.size() == p.btf_size) {
          btfs_.emplace(p.btf_id, bpf::BtfBlob{p.btf_id, std::move(btf.mapped().data)});
        } else {
          whole = false;
        }
      }
      if (!whole) {
        incomplete_.insert(p.hdr.id);
        return 0;
      }
      infos_.insert_or_assign(p.hdr.id, assemble_prog_info(p, part.funcs, part.arrays));
      captured_.insert(p.hdr.id);
      incomplete_.erase(p.hdr.id);
      return 0;
    }
    default:
      break;
  }
  bad_records_++;
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
  // Loads whose last record never came: not captured.
  for (auto& [id, part] : s.partial) incomplete_.insert(id);
  s.partial.clear();
  s.partial_btf.clear();
  if (s.ring) s.free_ring();
  bpf_object__close(s.object);
  s.object = nullptr;
  s.counters_fd = -1;
}

}  // namespace bpfprof::record
