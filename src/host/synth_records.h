// SPDX-License-Identifier: Apache-2.0
// Encoders for the records the recorder synthesizes (state before recording
// began). They carry a zero-filled sample_id trailer of the file's
// id_hdr_size: time 0 sorts them first, id 0 maps them to the first attr.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "bpf/prog_info.h"

namespace bpfprof::host {

// Appends whole records to a byte vector (layouts: perf-data-format.md 5.2).
class SynthBuffer {
 public:
  explicit SynthBuffer(size_t trailer_size) : trailer_size_(trailer_size) {}

  void mmap(uint16_t misc, uint32_t pid, uint32_t tid, uint64_t start, uint64_t len,
            uint64_t pgoff, std::string_view filename);
  struct Mmap2Fields {
    uint32_t pid = 0, tid = 0;
    uint64_t start = 0, len = 0, pgoff = 0;
    uint32_t maj = 0, min = 0;
    uint64_t ino = 0;
    uint32_t prot = 0, flags = 0;
  };
  void mmap2(uint16_t misc, const Mmap2Fields& m, std::string_view filename);
  void comm(uint32_t pid, uint32_t tid, std::string_view comm);
  void fork(uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid);
  void ksymbol(uint64_t addr, uint32_t len, uint16_t ksym_type, uint16_t flags,
               std::string_view name);
  void bpf_event(uint16_t type, uint32_t id, const bpf::Tag& tag);
  void cgroup(uint64_t id, std::string_view path);
  // Header-only user record (FINISHED_INIT), no trailer.
  void header_only(uint32_t type);

  const std::vector<std::byte>& bytes() const { return out_; }
  size_t records() const { return records_; }
  void clear() { out_.clear(); }

 private:
  size_t begin(uint32_t type, uint16_t misc);
  void finish(size_t at, bool trailer = true);
  template <class T>
  void put(const T& v);
  void put_string(std::string_view s);

  size_t trailer_size_;
  std::vector<std::byte> out_;
  size_t records_ = 0;
};

}  // namespace bpfprof::host
