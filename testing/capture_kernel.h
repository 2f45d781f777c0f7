// SPDX-License-Identifier: Apache-2.0
// What the capture's kernel tests share: trivial programs, links and perf
// events made by hand, the capture started or the reason it could not be,
// and system-wide recordings made while a test's code runs.
#pragma once

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "bpf/query.h"
#include "capture/capture.h"
#include "capture/capture_object.h"
#include "perfdata/reader.h"
#include "record/recorder.h"
#include "testing/paths.h"
#include "testing/subprocess.h"

namespace bpfprof::testing::capture_kernel {

// "r0 = 0; exit" as a program of `type` (expected attach type `attach`).
inline UniqueFd load_trivial(bpf_prog_type type, const char* name,
                             bpf_attach_type attach = BPF_CGROUP_INET_INGRESS) {
  bpf_insn prog[2] = {};
  prog[0].code = BPF_ALU64 | BPF_MOV | BPF_K;
  prog[1].code = BPF_JMP | BPF_EXIT;
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = attach);
  return UniqueFd(bpf_prog_load(type, name, "GPL", prog, 2, &opts));
}

inline uint32_t prog_id(int fd) {
  bpf_prog_info info{};
  uint32_t len = sizeof info;
  return bpf_obj_get_info_by_fd(fd, &info, &len) == 0 ? info.id : 0;
}

inline uint32_t link_id(int fd) {
  bpf_link_info info{};
  uint32_t len = sizeof info;
  return bpf_obj_get_info_by_fd(fd, &info, &len) == 0 ? info.id : 0;
}

inline UniqueFd perf_event(uint32_t type, uint64_t config) {
  perf_event_attr attr{};
  attr.type = type;
  attr.size = sizeof attr;
  attr.config = config;
  attr.sample_period = type == PERF_TYPE_TRACEPOINT ? 1 : 1'000'000;
  return UniqueFd(static_cast<int>(
      ::syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC)));
}

inline std::unique_ptr<capture::Capture> start_or_skip(const capture::CaptureConfig& config,
                                                      std::string& why) {
  auto c = capture::Capture::start(config);
  if (!c.ok()) {
    why = c.error().to_string();
    return nullptr;
  }
  return std::move(c).value();
}

inline off_t size_of(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : 0;
}

// A system-wide recording of `seconds` into `dir`/`file`.
inline record::RecordOptions system_wide(const TempDir& dir, const char* file,
                                 double seconds) {
  record::RecordOptions o;
  o.system_wide = true;
  o.duration_s = seconds;
  o.output = dir.file(file);
  return o;
}

// Records system-wide for `o.duration_s` while `during` runs once the file exists.
template <class Fn>
Result<record::RecordStats> record_while(const record::RecordOptions& o, Fn during,
                                        const record::RecordSink& sink = {}) {
  Result<record::RecordStats> stats = make_error(Errc::kInternal, "not run");
  std::thread recorder([&] { stats = record::record(o, sink); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (size_of(o.output) < 4096 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  during();
  recorder.join();
  return stats;
}

// Loads the test object; the ids of its programs (empty if it did not load).
inline std::vector<uint32_t> load_test_programs(bpf_object*& obj) {
  std::vector<uint32_t> ids;
  obj = bpf_object__open_file(BPFPROF_QUERY_PROGS_OBJ, nullptr);
  if (!obj || bpf_object__load(obj) != 0) return ids;
  bpf_program* p;
  bpf_object__for_each_program(p, obj) {
    if (auto info = bpf::read_prog_info(bpf_program__fd(p)); info.ok()) ids.push_back(info->id());
  }
  return ids;
}

// The capture's own program, loaded (not attached) as a test's program:
// its BTF is over 16 KiB, so its first piece (CAPTURE_CHUNK_MAX bytes) can
// never fit in a ring of one page, however fast it is drained.
inline std::vector<uint32_t> load_big_btf_programs(bpf_object*& obj) {
  std::vector<uint32_t> ids;
  const std::span<const unsigned char> image = capture::capture_object();
  obj = bpf_object__open_mem(image.data(), image.size(), nullptr);
  if (!obj || bpf_object__load(obj) != 0) return ids;
  bpf_program* p;
  bpf_object__for_each_program(p, obj) {
    if (auto info = bpf::read_prog_info(bpf_program__fd(p)); info.ok()) ids.push_back(info->id());
  }
  return ids;
}

inline const perfdata::EnrichedProgramEntry* entry_of(const perfdata::EnrichmentSection& s,
                                                      uint32_t id) {
  for (const auto& e : s.programs) {
    if (e.id == id) return &e;
  }
  return nullptr;
}

}  // namespace bpfprof::testing::capture_kernel
