// SPDX-License-Identifier: Apache-2.0
// Test-only: loads testdata/query_progs.bpf.c (built by CMake) and raw
// programs without BTF, so bpf/ tests run against real kernel objects.
#pragma once

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "testing/paths.h"

namespace bpfprof::testing {

struct BpfObjectCloser {
  void operator()(bpf_object* o) const { bpf_object__close(o); }
};
using BpfObjectPtr = std::unique_ptr<bpf_object, BpfObjectCloser>;

// query_progs.bpf.o opened and loaded; EPERM comes back as Errc::kPermission.
inline Result<BpfObjectPtr> load_query_progs() {
  BpfObjectPtr obj(bpf_object__open_file(BPFPROF_QUERY_PROGS_OBJ, nullptr));
  if (!obj) return make_sys_error(std::string("bpf_object__open_file ") + BPFPROF_QUERY_PROGS_OBJ, errno);
  int rc = bpf_object__load(obj.get());
  if (rc < 0) return make_sys_error("bpf_object__load query_progs", -rc);
  return obj;
}

// fd of program `name` in `obj` (owned by obj), or -1.
inline int prog_fd_in(bpf_object* obj, const char* name) {
  bpf_program* p = bpf_object__find_program_by_name(obj, name);
  return p ? bpf_program__fd(p) : -1;
}

inline bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst & 0xf;
  i.src_reg = src & 0xf;
  i.off = off;
  i.imm = imm;
  return i;
}

// A socket filter without BTF: "r0 = 0; exit", or with `with_subprog` a
// bpf2bpf call to a second function doing that. `name` may be empty.
inline Result<UniqueFd> load_raw_prog(const std::string& name, bool with_subprog) {
  std::vector<bpf_insn> insns;
  const bpf_insn mov0 = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0);
  const bpf_insn exit = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
  if (with_subprog) {
    insns.push_back(insn(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, 1));  // call insn 2
    insns.push_back(exit);
  }
  insns.push_back(mov0);
  insns.push_back(exit);
  int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, name.empty() ? nullptr : name.c_str(), "GPL",
                         insns.data(), insns.size(), nullptr);
  if (fd < 0) return make_sys_error("bpf_prog_load raw " + name, -fd);
  return UniqueFd(fd);
}

}  // namespace bpfprof::testing
