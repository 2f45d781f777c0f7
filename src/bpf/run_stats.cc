// SPDX-License-Identifier: Apache-2.0
// BPF run statistics (query.h).
#include <bpf/bpf.h>

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

}  // namespace bpfprof::bpf
