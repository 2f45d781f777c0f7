// SPDX-License-Identifier: Apache-2.0
// BPF run statistics and the probe for tracing programs (query.h).
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>

#include "bpf/query.h"

namespace bpfprof::bpf {

Result<UniqueFd> enable_run_stats() {
  int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
  if (fd < 0) return make_sys_error("bpf_enable_stats(BPF_STATS_RUN_TIME)", -fd);
  return UniqueFd(fd);
}

Result<RunStats> read_run_stats(int prog_fd) {
  // Zero counts: the kernel fills the scalars and copies no array.
  bpf_prog_info info{};
  __u32 len = sizeof info;
  int rc = bpf_obj_get_info_by_fd(prog_fd, &info, &len);
  if (rc < 0) return make_sys_error("bpf_obj_get_info_by_fd (run stats)", -rc);
  return RunStats{info.run_cnt, info.run_time_ns};
}

namespace {

// Loads `return 0` as an fentry program on vmlinux BTF type `btf_id` and
// closes it at once; 0 when it loaded, else the errno.
int load_fentry(uint32_t btf_id) {
  const bpf_insn insns[] = {
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .src_reg = 0, .off = 0, .imm = 0},
      {.code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
  };
  LIBBPF_OPTS(bpf_prog_load_opts, opts);
  opts.expected_attach_type = BPF_TRACE_FENTRY;
  opts.attach_btf_id = btf_id;
  int fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "bpfprof_probe", "GPL", insns, 2, &opts);
  if (fd < 0) return -fd;
  UniqueFd owned(fd);
  return 0;
}

}  // namespace

int probe_fentry_with_btf() {
  // libbpf reads and indexes all of /sys/kernel/btf/vmlinux for the id.
  const int btf_id = libbpf_find_vmlinux_btf_id("bpf_prog_free_id", BPF_TRACE_FENTRY);
  if (btf_id < 0) return -btf_id;
  return load_fentry(static_cast<uint32_t>(btf_id));
}

int probe_fentry() {
  // First the question that needs no BTF: may this process load a tracing
  // program at all? Without an attach_btf_id the kernel runs its permission
  // checks (capabilities, the LSM bpf_prog_load hook) and only then has the
  // verifier refuse the missing target with EINVAL, so EPERM here is the
  // kernel's refusal whatever the target (6.18 answers EPERM alike for id 0,
  // 1, the real id and an out-of-range id). Any other answer: the real probe.
  // Gated on the sysfs BTF so that a kernel without it still reports what
  // the lookup says (ENOENT), as before. The lookup costs a few ms of CPU per
  // recording (a quarter of a short recording's fixed cost).
  if (::access("/sys/kernel/btf/vmlinux", R_OK) == 0 && load_fentry(0) == EPERM) return EPERM;
  return probe_fentry_with_btf();
}

}  // namespace bpfprof::bpf
