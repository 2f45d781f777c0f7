// SPDX-License-Identifier: Apache-2.0
#include "workload/price.h"

#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <sys/wait.h>

namespace bpfprof::workload {
namespace {

int sys_bpf(int cmd, bpf_attr& attr) {
  return static_cast<int>(::syscall(SYS_bpf, cmd, &attr, sizeof attr));
}

bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst;
  i.src_reg = src;
  i.off = off;
  i.imm = imm;
  return i;
}

constexpr int kUpdates = 16;
constexpr int kKeys = 16;

int create_map() {
  bpf_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.map_type = BPF_MAP_TYPE_HASH;
  attr.key_size = 4;
  attr.value_size = 8;
  attr.max_entries = kKeys;
  std::strncpy(attr.map_name, "price_map", sizeof attr.map_name - 1);
  return sys_bpf(BPF_MAP_CREATE, attr);
}

// if (current tgid == tgid) { for i < kUpdates: map[i % kKeys] = i; } return 0
int load_program(bpf_prog_type type, int map_fd, uint32_t tgid) {
  std::vector<bpf_insn> p;
  p.push_back(insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_current_pid_tgid));
  p.push_back(insn(BPF_ALU64 | BPF_RSH | BPF_K, 0, 0, 0, 32));
  const size_t skip = p.size();
  p.push_back(insn(BPF_JMP | BPF_JNE | BPF_K, 0, 0, 0, static_cast<int32_t>(tgid)));
  for (int i = 0; i < kUpdates; i++) {
    p.push_back(insn(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -4, i % kKeys));
    p.push_back(insn(BPF_ST | BPF_MEM | BPF_DW, BPF_REG_10, 0, -16, i));
    p.push_back(insn(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, map_fd));
    p.push_back(insn(0, 0, 0, 0, 0));
    p.push_back(insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0));
    p.push_back(insn(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -4));
    p.push_back(insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_3, BPF_REG_10, 0, 0));
    p.push_back(insn(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_3, 0, 0, -16));
    p.push_back(insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_4, 0, 0, BPF_ANY));
    p.push_back(insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_update_elem));
  }
  p[skip].off = static_cast<int16_t>(p.size() - skip - 1);
  p.push_back(insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0));
  p.push_back(insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
  static char log[65536];
  bpf_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.prog_type = type;
  attr.insns = reinterpret_cast<uint64_t>(p.data());
  attr.insn_cnt = static_cast<uint32_t>(p.size());
  attr.license = reinterpret_cast<uint64_t>("GPL");
  attr.log_buf = reinterpret_cast<uint64_t>(log);
  attr.log_size = sizeof log;
  attr.log_level = 1;
  std::strncpy(attr.prog_name, "price_map", sizeof attr.prog_name - 1);
  const int fd = sys_bpf(BPF_PROG_LOAD, attr);
  if (fd < 0) std::fprintf(stderr, "BPF_PROG_LOAD: %s\n%s\n", std::strerror(errno), log);
  return fd;
}

// Attaches; returns the fd that keeps it attached (close detaches): a raw
// tracepoint's, a BPF link over the tracepoint's perf event, or with
// `classic` the perf event itself, the program set on it by
// PERF_EVENT_IOC_SET_BPF (as bcc and bpftrace attach, no link). With
// prog_fd < 0 only the perf event is opened and enabled (its fd).
int attach(bool raw_tp, int prog_fd, bool classic = false) {
  if (raw_tp) {
    bpf_attr attr;
    std::memset(&attr, 0, sizeof attr);
    attr.raw_tracepoint.name = reinterpret_cast<uint64_t>("sys_enter");
    attr.raw_tracepoint.prog_fd = static_cast<uint32_t>(prog_fd);
    const int fd = sys_bpf(BPF_RAW_TRACEPOINT_OPEN, attr);
    if (fd < 0) std::fprintf(stderr, "BPF_RAW_TRACEPOINT_OPEN: %s\n", std::strerror(errno));
    return fd;
  }
  std::ifstream in("/sys/kernel/tracing/events/raw_syscalls/sys_enter/id");
  uint64_t id = 0;
  if (!(in >> id)) {
    std::fprintf(stderr, "no tracefs at /sys/kernel/tracing (mount it)\n");
    return -1;
  }
  perf_event_attr pa;
  std::memset(&pa, 0, sizeof pa);
  pa.size = sizeof pa;
  pa.type = PERF_TYPE_TRACEPOINT;
  pa.config = id;
  pa.sample_period = 1;
  pa.wakeup_events = 1;
  // One event suffices: a tracepoint's programs run on every CPU.
  const int fd = static_cast<int>(::syscall(SYS_perf_event_open, &pa, -1, 0, -1, PERF_FLAG_FD_CLOEXEC));
  if (fd < 0) {
    std::fprintf(stderr, "perf_event_open: %s\n", std::strerror(errno));
    return -1;
  }
  if (classic) {
    if (::ioctl(fd, PERF_EVENT_IOC_SET_BPF, prog_fd) != 0 || ::ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
      std::fprintf(stderr, "PERF_EVENT_IOC_SET_BPF/ENABLE: %s\n", std::strerror(errno));
      ::close(fd);
      return -1;
    }
    return fd;
  }
  if (prog_fd < 0) {
    if (::ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
      std::fprintf(stderr, "PERF_EVENT_IOC_ENABLE: %s\n", std::strerror(errno));
      ::close(fd);
      return -1;
    }
    return fd;
  }
  // As libbpf's bpf_program__attach_tracepoint: a BPF link over the perf
  // event (PERF_EVENT_IOC_SET_BPF underneath), which a recording sees made.
  bpf_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.link_create.prog_fd = static_cast<uint32_t>(prog_fd);
  attr.link_create.target_fd = static_cast<uint32_t>(fd);
  attr.link_create.attach_type = BPF_PERF_EVENT;
  const int link = sys_bpf(BPF_LINK_CREATE, attr);
  ::close(fd);  // the link holds the event
  if (link < 0) std::fprintf(stderr, "BPF_LINK_CREATE: %s\n", std::strerror(errno));
  return link;
}

uint64_t cpu_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

double run_ops(uint64_t ops) {
  const uint64_t t0 = cpu_ns();
  for (uint64_t i = 0; i < ops; i++) ::syscall(SYS_getppid);
  return static_cast<double>(cpu_ns() - t0) / static_cast<double>(ops);
}


Status run_one(const PriceOptions& o) {
  const bool raw_tp = o.hook == "raw_tp";
  const bool classic = o.hook == "tracepoint_ioctl";
  int prog_fd = -1;
  if (o.hook != "perf_only") {
    const int map_fd = create_map();
    if (map_fd < 0) return make_sys_error("BPF_MAP_CREATE", errno);
    prog_fd = load_program(raw_tp ? BPF_PROG_TYPE_RAW_TRACEPOINT : BPF_PROG_TYPE_TRACEPOINT,
                           map_fd, static_cast<uint32_t>(::getpid()));
    if (prog_fd < 0) return make_sys_error("loading price_map", errno);
  }
  if (o.rounds == 0) {
    const int fd = attach(raw_tp, prog_fd, classic);
    if (fd < 0) return make_error(Errc::kInvalidArgument, "attaching price_map");
    std::printf("attached_ns %.1f\n", run_ops(o.ops));
    ::close(fd);
    return ok_status();
  }
  run_ops(o.ops / 10);  // warm up
  for (unsigned r = 0; r < o.rounds; r++) {
    std::printf("detached_ns %.1f\n", run_ops(o.ops));
    const int fd = attach(raw_tp, prog_fd, classic);
    if (fd < 0) return make_error(Errc::kInvalidArgument, "attaching price_map");
    std::printf("attached_ns %.1f\n", run_ops(o.ops));
    ::close(fd);
    std::fflush(stdout);
  }
  return ok_status();
}

}  // namespace

Status run_price(const PriceOptions& o) {
  if (o.hook != "tracepoint" && o.hook != "tracepoint_ioctl" && o.hook != "raw_tp" &&
      o.hook != "perf_only") {
    return make_error(Errc::kInvalidArgument, "--price takes tracepoint, tracepoint_ioctl, raw_tp or "
                                              "perf_only, not '" + o.hook + "'");
  }
  std::fflush(stdout);
  std::vector<pid_t> children;
  for (unsigned i = 1; i < o.processes; i++) {
    const pid_t child = ::fork();
    if (child == 0) {
      const Status s = run_one(o);
      std::fflush(stdout);
      ::_exit(s.ok() ? 0 : 1);
    }
    if (child > 0) children.push_back(child);
  }
  Status s = run_one(o);
  for (pid_t c : children) {
    int status = 0;
    ::waitpid(c, &status, 0);
    if (s.ok() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      s = make_error(Errc::kInvalidArgument, "a --price process failed");
    }
  }
  return s;
}

}  // namespace bpfprof::workload
