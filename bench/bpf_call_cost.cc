// SPDX-License-Identifier: Apache-2.0
// What one bpf() call costs its caller (bench/syscall_cost.sh runs it with
// and without a recording; not a test): ns per call of five commands, timed
// in one process so process start-up (a bpftool per call would be
// milliseconds) is not in the figures:
//   map_lookup    BPF_MAP_LOOKUP_ELEM, key 0 of a one-entry array map
//   map_update    BPF_MAP_UPDATE_ELEM of the same entry
//   test_run      BPF_PROG_TEST_RUN of "r0 = 0; exit" (a socket filter,
//                 repeat 1, a 64-byte packet), after 1000 untimed runs: the
//                 first run of a program is the one a recording notes
//   get_info      BPF_OBJ_GET_INFO_BY_FD of that program (bpf_prog_info only)
//   load          BPF_PROG_LOAD of the same program plus the close that
//                 unloads it
// The commands are timed in `slices` interleaved passes (each a slice of every
// command's calls), so a burst of load on the machine spreads over all five.
// Naming one command times it alone (for a per-command breakdown of the
// capture programs' run time with kernel.bpf_stats_enabled).
//
// With BPFPROF_COST_FLOOR="<sys_enter_bpf id> <sys_exit_bpf id>" (the
// tracepoints' ids in tracefs), it first attaches a program that returns at
// once ("r0 = 0; exit") to each of the two tracepoints: what is left to pay
// then is the kernel's path to run a program on both syscall tracepoints.
// With BPFPROF_COST_EXIT_FLOOR="<sys_exit_bpf id>", one such program on the
// exit alone, as the capture attaches its own: the path no capture program
// can avoid. It then also prints "floor_enter_runs <run_cnt> <run_time_ns>"
// and the same for floor_exit (non-zero with kernel.bpf_stats_enabled).
//
//   bpfprof-bpf-call-cost [calls] [loads] [slices] [command]
// prints "<command>_ns <mean>" per command, each over its timed calls.
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

int sys_bpf(int cmd, bpf_attr& attr) {
  return static_cast<int>(::syscall(SYS_bpf, cmd, &attr, sizeof attr));
}

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "bpfprof-bpf-call-cost: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

int load_trivial(bpf_prog_type type = BPF_PROG_TYPE_SOCKET_FILTER,
                 const char* name = "bpfprof_cost") {
  static const bpf_insn prog[2] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0},  // r0 = 0
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  bpf_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.prog_type = type;
  attr.insns = reinterpret_cast<uint64_t>(prog);
  attr.insn_cnt = 2;
  attr.license = reinterpret_cast<uint64_t>("GPL");
  std::strncpy(attr.prog_name, name, sizeof attr.prog_name - 1);
  return sys_bpf(BPF_PROG_LOAD, attr);
}

int create_array() {
  bpf_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.map_type = BPF_MAP_TYPE_ARRAY;
  attr.key_size = 4;
  attr.value_size = 8;
  attr.max_entries = 1;
  std::strncpy(attr.map_name, "bpfprof_cost", sizeof attr.map_name - 1);
  return sys_bpf(BPF_MAP_CREATE, attr);
}

uint32_t key = 0;
uint64_t value = 0;

bool map_elem(int cmd, int map) {
  bpf_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.map_fd = static_cast<uint32_t>(map);
  attr.key = reinterpret_cast<uint64_t>(&key);
  attr.value = reinterpret_cast<uint64_t>(&value);
  return sys_bpf(cmd, attr) == 0;
}

bool test_run(int fd) {
  static unsigned char packet[64];
  bpf_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.test.prog_fd = static_cast<uint32_t>(fd);
  attr.test.data_in = reinterpret_cast<uint64_t>(packet);
  attr.test.data_size_in = sizeof packet;
  attr.test.repeat = 1;
  return sys_bpf(BPF_PROG_TEST_RUN, attr) == 0;
}

// BPF_OBJ_GET_INFO_BY_FD of program `fd` into `info`.
bool read_info(int fd, bpf_prog_info& info) {
  std::memset(&info, 0, sizeof info);
  bpf_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.info.bpf_fd = static_cast<uint32_t>(fd);
  attr.info.info_len = sizeof info;
  attr.info.info = reinterpret_cast<uint64_t>(&info);
  return sys_bpf(BPF_OBJ_GET_INFO_BY_FD, attr) == 0;
}

bool get_info(int fd) {
  bpf_prog_info info;
  return read_info(fd, info);
}

bool load_and_close() {
  const int p = load_trivial();
  if (p < 0) return false;
  ::close(p);
  return true;
}

// A program that returns at once on tracepoint `id` (every task, run on any
// CPU; the event itself records nothing). Both fds stay open until exit;
// the program's fd is returned.
int attach_floor(uint64_t id, const char* name) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.type = PERF_TYPE_TRACEPOINT;
  attr.size = sizeof attr;
  attr.config = id;
  attr.sample_period = 1;
  const int event = static_cast<int>(::syscall(SYS_perf_event_open, &attr, -1, 0, -1, 0));
  if (event < 0) fail("perf_event_open of a tracepoint");
  const int prog = load_trivial(BPF_PROG_TYPE_TRACEPOINT, name);
  if (prog < 0) fail("BPF_PROG_LOAD of a tracepoint program");
  if (::ioctl(event, PERF_EVENT_IOC_SET_BPF, prog) != 0) fail("PERF_EVENT_IOC_SET_BPF");
  return prog;
}

// A program that returns at once on raw tracepoint `name` (sys_enter,
// sys_exit: every system call of every task), attached by
// BPF_RAW_TRACEPOINT_OPEN; the program's fd is returned.
int attach_raw_floor(const char* name, const char* prog_name) {
  const int prog = load_trivial(BPF_PROG_TYPE_RAW_TRACEPOINT, prog_name);
  if (prog < 0) fail("BPF_PROG_LOAD of a raw tracepoint program");
  bpf_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.raw_tracepoint.name = reinterpret_cast<uint64_t>(name);
  attr.raw_tracepoint.prog_fd = static_cast<uint32_t>(prog);
  if (sys_bpf(BPF_RAW_TRACEPOINT_OPEN, attr) < 0) fail("BPF_RAW_TRACEPOINT_OPEN");
  return prog;
}

// The kernel's run statistics of program `fd` (kernel.bpf_stats_enabled).
void print_run_stats(int fd, const char* name) {
  bpf_prog_info info;
  if (!read_info(fd, info)) fail("BPF_OBJ_GET_INFO_BY_FD");
  std::printf("%s_runs %llu %llu\n", name, static_cast<unsigned long long>(info.run_cnt),
              static_cast<unsigned long long>(info.run_time_ns));
}

double now_ns() {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count());
}

}  // namespace

int main(int argc, char** argv) {
  const long calls = argc > 1 ? std::atol(argv[1]) : 100000;
  const long loads = argc > 2 ? std::atol(argv[2]) : 2000;
  const long slices = argc > 3 ? std::atol(argv[3]) : 10;
  const char* only = argc > 4 ? argv[4] : nullptr;
  if (calls <= 0 || loads <= 0 || slices <= 0 || calls < slices || loads < slices) {
    std::fprintf(stderr, "usage: bpfprof-bpf-call-cost [calls > 0] [loads > 0] [slices <= both]\n");
    return 2;
  }
  int floor_enter = -1, floor_exit = -1;
  if (const char* floor = std::getenv("BPFPROF_COST_FLOOR")) {
    unsigned long long enter = 0, exit = 0;
    if (std::sscanf(floor, "%llu %llu", &enter, &exit) != 2) {
      std::fprintf(stderr, "bpfprof-bpf-call-cost: BPFPROF_COST_FLOOR: two tracepoint ids\n");
      return 2;
    }
    floor_enter = attach_floor(enter, "floor_enter");
    floor_exit = attach_floor(exit, "floor_exit");
  }
  // One program, on sys_exit_bpf alone: the floor of a capture that decides
  // at the exit only.
  if (const char* floor = std::getenv("BPFPROF_COST_EXIT_FLOOR")) {
    floor_exit = attach_floor(std::strtoull(floor, nullptr, 10), "floor_exit");
  }
  if (std::getenv("BPFPROF_COST_RAW_FLOOR")) {
    floor_enter = attach_raw_floor("sys_enter", "floor_enter");
    floor_exit = attach_raw_floor("sys_exit", "floor_exit");
  }
  const int map = create_array();
  if (map < 0) fail("BPF_MAP_CREATE");
  const int prog = load_trivial();
  if (prog < 0) fail("BPF_PROG_LOAD");
  for (int i = 0; i < 1000; i++) {
    if (!test_run(prog)) fail("BPF_PROG_TEST_RUN");
  }

  struct Command {
    const char* name;
    long calls;
    bool (*call)(int map, int prog);
    double ns = 0;
  };
  std::array<Command, 5> commands{{
      {"map_lookup", calls, [](int m, int) { return map_elem(BPF_MAP_LOOKUP_ELEM, m); }},
      {"map_update", calls, [](int m, int) { return map_elem(BPF_MAP_UPDATE_ELEM, m); }},
      {"test_run", calls, [](int, int p) { return test_run(p); }},
      {"get_info", calls, [](int, int p) { return get_info(p); }},
      {"load", loads, [](int, int) { return load_and_close(); }},
  }};
  for (long s = 0; s < slices; s++) {
    for (Command& c : commands) {
      if (only && std::strcmp(only, c.name) != 0) continue;
      const long n = c.calls / slices;
      const double t0 = now_ns();
      for (long i = 0; i < n; i++) {
        if (!c.call(map, prog)) fail(c.name);
      }
      c.ns += now_ns() - t0;
    }
  }
  for (const Command& c : commands) {
    if (only && std::strcmp(only, c.name) != 0) continue;
    std::printf("%s_ns %.0f\n", c.name, c.ns / static_cast<double>(c.calls / slices * slices));
  }
  if (floor_enter >= 0) print_run_stats(floor_enter, "floor_enter");
  if (floor_exit >= 0) print_run_stats(floor_exit, "floor_exit");
  return 0;
}
