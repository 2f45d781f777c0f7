// SPDX-License-Identifier: Apache-2.0
// One workload BPF program: loaded from an embedded object with libbpf, run
// through BPF_PROG_TEST_RUN, unloaded on close, with its ground truth.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"

struct btf;
struct bpf_object;

namespace bpfprof::workload {

// What a program is for; each kind has its own entry point (and so name).
enum class Kind { kBurner, kSubprog, kLongLived, kHold, kProbe, kAttached };
const char* kind_name(Kind kind);

// One JIT'd function of a program.
struct FunctionTruth {
  std::string ksym;           // the kernel's name, or the computed one
  bool from_kallsyms = false;
  std::string computed_ksym;  // "bpf_prog_<tag>_<btf func name>", the kernel's rule
  uint64_t addr = 0;
  uint32_t len = 0;
};

// Ground truth of one program; times are CLOCK_MONOTONIC nanoseconds.
struct ProgramTruth {
  uint32_t id = 0;
  std::string name;
  std::string tag;  // 16 hex digits
  Kind kind = Kind::kBurner;
  uint64_t lifetime_ns = 0;  // the nominal lifetime asked for, 0 if open-ended
  uint64_t load_ns = 0;      // right after bpf_object__load returned
  uint32_t load_tid = 0;     // the thread that loaded it
  uint64_t load_duration_ns = 0;  // bpf_object__load: verification and JIT
  uint64_t unload_ns = 0;    // right after close() of the program's last fd
  uint64_t run_ns = 0;       // sum of test-run duration x repeat
  uint64_t run_count = 0;    // program executions (sum of repeat)
  uint64_t test_runs = 0;    // BPF_PROG_TEST_RUN calls
  uint64_t cpu_ns = 0;       // thread CPU time spent inside those calls
  std::vector<FunctionTruth> functions;
  // kAttached: where it is attached, as bpfprof names it.
  std::vector<std::string> attach;
};

uint64_t monotonic_ns();

// Writes a u32 .rodata variable of `obj` between open and load.
Status set_rodata_u32(::bpf_object* obj, const char* var, uint32_t value);

// Owns the only reference to a loaded program: one fd. The program lives
// exactly as long as this does (or until close()). Movable, not copyable.
class LoadedProgram {
 public:
  // Opens the embedded object of `kind`, enables only its entry point, sets
  // the loop count and loads it. Fills id, name, tag, load_ns and functions
  // (with computed ksym names; see resolve_kallsyms). The bpf_object is closed
  // before returning: the program keeps its maps and BTF alive by itself.
  static Result<LoadedProgram> load(Kind kind, uint32_t burn_iters, uint64_t seed);

  LoadedProgram(LoadedProgram&&) noexcept = default;
  LoadedProgram& operator=(LoadedProgram&& other) noexcept;
  ~LoadedProgram() { close(); }

  // One BPF_PROG_TEST_RUN executing the program `repeat` times.
  Status run(uint32_t repeat);
  // Replaces computed ksym names by those /proc/kallsyms lists now.
  Status resolve_kallsyms();
  // Unloads the program and records unload_ns; idempotent.
  void close();

  bool loaded() const { return fd_.valid(); }
  ProgramTruth& truth() { return truth_; }
  const ProgramTruth& truth() const { return truth_; }

 private:
  LoadedProgram() = default;
  Status fetch_functions(const btf* types);

  UniqueFd fd_;
  std::vector<unsigned char> packet_;
  ProgramTruth truth_;
};

// The default loop count per program execution (about 10 us on a 2020s x86).
inline constexpr uint32_t kDefaultBurnIters = 256;

}  // namespace bpfprof::workload
