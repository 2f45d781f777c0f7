// SPDX-License-Identifier: Apache-2.0
// What one bpf() call costs its caller (bench/syscall_cost.sh runs it with
// and without a recording; not a test): ns per BPF_PROG_TEST_RUN of "r0 = 0;
// exit" (a socket filter, repeat 1, a 64-byte packet), and ns per
// BPF_PROG_LOAD of the same program plus the close that unloads it. One
// process times many calls, so process start-up (a bpftool per call would
// be milliseconds) is not in the figures.
//
//   bpfprof-bpf-call-cost [test runs] [loads]
// prints "test_run_ns <mean>" and "load_ns <mean>", each over the timed calls.
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

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

int load_trivial() {
  static const bpf_insn prog[2] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0},  // r0 = 0
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  bpf_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
  attr.insns = reinterpret_cast<uint64_t>(prog);
  attr.insn_cnt = 2;
  attr.license = reinterpret_cast<uint64_t>("GPL");
  std::strncpy(attr.prog_name, "bpfprof_cost", sizeof attr.prog_name - 1);
  return sys_bpf(BPF_PROG_LOAD, attr);
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

double now_ns() {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count());
}

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "bpfprof-bpf-call-cost: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  const long runs = argc > 1 ? std::atol(argv[1]) : 200000;
  const long loads = argc > 2 ? std::atol(argv[2]) : 2000;
  if (runs <= 0 || loads <= 0) {
    std::fprintf(stderr, "usage: bpfprof-bpf-call-cost [test runs > 0] [loads > 0]\n");
    return 2;
  }
  const int fd = load_trivial();
  if (fd < 0) fail("BPF_PROG_LOAD");
  // The first run of a program is the one a recording notes; time the rest.
  for (int i = 0; i < 1000; i++) {
    if (!test_run(fd)) fail("BPF_PROG_TEST_RUN");
  }
  double t0 = now_ns();
  for (long i = 0; i < runs; i++) {
    if (!test_run(fd)) fail("BPF_PROG_TEST_RUN");
  }
  std::printf("test_run_ns %.0f\n", (now_ns() - t0) / static_cast<double>(runs));
  ::close(fd);

  t0 = now_ns();
  for (long i = 0; i < loads; i++) {
    const int p = load_trivial();
    if (p < 0) fail("BPF_PROG_LOAD");
    ::close(p);
  }
  std::printf("load_ns %.0f\n", (now_ns() - t0) / static_cast<double>(loads));
  return 0;
}
