// SPDX-License-Identifier: Apache-2.0
#include "host/synth_records.h"

#include <cstring>

#include "base/byte_cursor.h"
#include "perf/abi.h"

namespace bpfprof::host {

template <class T>
void SynthBuffer::put(const T& v) {
  append_pod(out_, v);
}

size_t SynthBuffer::begin(uint32_t type, uint16_t misc) {
  size_t at = out_.size();
  put(type);
  put(misc);
  put(uint16_t{0});  // size, patched by finish()
  return at;
}

void SynthBuffer::finish(size_t at, bool trailer) {
  if (trailer) out_.resize(out_.size() + trailer_size_);
  size_t size = out_.size() - at;
  // Names are bounded (PATH_MAX, KSYM_NAME_LEN), so a record always fits u16.
  uint16_t size16 = static_cast<uint16_t>(size);
  std::memcpy(out_.data() + at + 6, &size16, sizeof size16);
  records_++;
}

// NUL-terminated and zero-padded to 8 bytes, as the kernel writes names.
void SynthBuffer::put_string(std::string_view s) {
  if (s.size() > 4096) s = s.substr(0, 4096);
  size_t n = (s.size() + 1 + 7) & ~size_t{7};
  size_t at = out_.size();
  out_.resize(at + n);
  std::memcpy(out_.data() + at, s.data(), s.size());
}

void SynthBuffer::mmap(uint16_t misc, uint32_t pid, uint32_t tid, uint64_t start, uint64_t len,
                       uint64_t pgoff, std::string_view filename) {
  size_t at = begin(perf::kRecordMmap, misc);
  put(pid);
  put(tid);
  put(start);
  put(len);
  put(pgoff);
  put_string(filename);
  finish(at);
}

void SynthBuffer::mmap2(uint16_t misc, const Mmap2Fields& m, std::string_view filename) {
  size_t at = begin(perf::kRecordMmap2, misc);
  put(m.pid);
  put(m.tid);
  put(m.start);
  put(m.len);
  put(m.pgoff);
  put(m.maj);
  put(m.min);
  put(m.ino);
  put(uint64_t{0});  // ino_generation: /proc does not tell it
  put(m.prot);
  put(m.flags);
  put_string(filename);
  finish(at);
}

void SynthBuffer::comm(uint32_t pid, uint32_t tid, std::string_view comm) {
  size_t at = begin(perf::kRecordComm, 0);
  put(pid);
  put(tid);
  put_string(comm.substr(0, 15));  // TASK_COMM_LEN incl. NUL
  finish(at);
}

void SynthBuffer::fork(uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid) {
  // FORK_EXEC: readers must not copy the parent's maps; our MMAP2s follow.
  size_t at = begin(perf::kRecordFork, perf::kMiscForkExec);
  put(pid);
  put(ppid);
  put(tid);
  put(ptid);
  put(uint64_t{0});
  finish(at);
}

void SynthBuffer::ksymbol(uint64_t addr, uint32_t len, uint16_t ksym_type, uint16_t flags,
                          std::string_view name) {
  size_t at = begin(perf::kRecordKsymbol, 0);
  put(addr);
  put(len);
  put(ksym_type);
  put(flags);
  put_string(name.substr(0, 511));  // KSYM_NAME_LEN
  finish(at);
}

void SynthBuffer::bpf_event(uint16_t type, uint32_t id, const bpf::Tag& tag) {
  size_t at = begin(perf::kRecordBpfEvent, 0);
  put(type);
  put(uint16_t{0});
  put(id);
  put(tag);
  finish(at);
}

void SynthBuffer::cgroup(uint64_t id, std::string_view path) {
  size_t at = begin(perf::kRecordCgroup, 0);
  put(id);
  put_string(path);
  finish(at);
}

void SynthBuffer::header_only(uint32_t type) { finish(begin(type, 0), false); }

}  // namespace bpfprof::host
