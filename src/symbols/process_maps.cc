// SPDX-License-Identifier: Apache-2.0
#include "symbols/process_maps.h"

#include <algorithm>
#include <string>

namespace bpfprof::symbols {

bool is_fileless_mapping(std::string_view path) {
  return path.empty() || path.front() == '[' || path.starts_with("//anon") ||
         path.starts_with("/memfd:") || path.starts_with("/dev/zero") || path.front() != '/';
}

uint32_t ProcessMaps::file_index(std::string_view path, std::span<const uint8_t> build_id) {
  std::string key(path);
  key.push_back('\0');
  key.append(reinterpret_cast<const char*>(build_id.data()), build_id.size());
  if (auto it = file_index_.find(key); it != file_index_.end()) return it->second;
  MappedFile f;
  f.path = path;
  f.build_id.assign(build_id.begin(), build_id.end());
  f.vdso = path == "[vdso]";
  if (f.vdso) {
    f.elf = vdso_slot_;
  } else if (!is_fileless_mapping(path)) {
    f.elf = elf_.slot(path);
  }
  files_.push_back(std::move(f));
  const auto i = static_cast<uint32_t>(files_.size() - 1);
  file_index_.emplace(std::move(key), i);
  return i;
}

void ProcessMaps::on_mmap(uint64_t time, uint32_t pid, uint64_t start, uint64_t len,
                          uint64_t pgoff, std::string_view filename,
                          std::span<const uint8_t> build_id) {
  if (len == 0) return;
  process_mut(pid).add(start, start + len, time, 0, MapPayload{file_index(filename, build_id), pgoff});
}

void ProcessMaps::end_all(Timeline& t, uint64_t time) {
  for (uint32_t i = 0; i < t.size(); ++i) {
    if (t.entry(i).t_end == kForever) t.close(i, time);
  }
}

void ProcessMaps::on_comm(uint64_t time, uint32_t pid, uint32_t tid, std::string_view comm,
                          bool exec) {
  // exec: the new image's MMAPs follow this COMM and win where they lie. The
  // old image's maps are not ended: samples taken in the rest of the execve
  // call, after this COMM, still carry the old image's user frames (the
  // registers it entered the kernel with), as Linux perf names them too.
  (void)exec;
  process_mut(pid);
  comms_[tid].push_back({time, comm});
}

void ProcessMaps::on_fork(uint64_t time, uint32_t pid, uint32_t ppid, uint32_t tid,
                          uint32_t ptid, bool fork_exec) {
  // The new thread starts with its parent thread's name.
  if (auto c = comms_.find(ptid); c != comms_.end() && !c->second.empty() && tid != ptid) {
    std::string_view parent = comm_in(c->second, time).comm;
    if (!parent.empty()) comms_[tid].push_back({time, parent});
  }
  if (pid == ppid && tid != pid) {
    process_mut(pid);  // a thread: it shares the process's maps
    return;
  }
  // A new process, possibly reusing an old pid: start from an empty space.
  Timeline& child = process_mut(pid);
  end_all(child, time);
  // perf-style synthesized FORKs say FORK_EXEC: their MMAPs follow, no copy.
  if (fork_exec || pid == ppid) return;
  auto parent = procs_.find(ppid);
  if (parent == procs_.end()) return;
  // procs_ may rehash when the child was inserted above; `parent` is found after.
  const Timeline& from = parent->second;
  std::vector<Timeline::Entry> copy;
  for (const auto& e : from.entries()) {
    if (e.t_begin <= time && time < e.t_end) copy.push_back(e);
  }
  Timeline& to = procs_[pid];
  for (const auto& e : copy) to.add(e.start, e.end, time, e.priority, e.payload);
}

void ProcessMaps::finish() {
  serial_ = next_timeline_serial();
  for (auto& [pid, t] : procs_) t.build();
  for (auto& [tid, list] : comms_) {
    std::stable_sort(list.begin(), list.end(),
                     [](const CommAt& a, const CommAt& b) { return a.time < b.time; });
  }
}

const ProcessMaps::Timeline* ProcessMaps::process(uint32_t pid) const {
  auto it = procs_.find(pid);
  return it == procs_.end() ? nullptr : &it->second;
}

ProcessMaps::CommSpan ProcessMaps::comm_in(const std::vector<CommAt>& list, uint64_t time) {
  CommSpan span;
  if (list.empty()) return span;
  auto it = std::upper_bound(list.begin(), list.end(), time,
                             [](uint64_t t, const CommAt& c) { return t < c.time; });
  span.comm = it == list.begin() ? list.front().comm : std::prev(it)->comm;
  if (it != list.begin()) span.from = std::prev(it)->time;
  if (it != list.end()) span.to = it->time;
  return span;
}

ProcessMaps::CommSpan ProcessMaps::comm_span(uint32_t pid, uint32_t tid, uint64_t time) const {
  // Each thread remembers its last few (pid, tid) after finish() (a
  // time-sorted walk interleaves the threads running on each CPU), with the
  // answer and the times it holds for.
  struct Last {
    uint64_t serial = 0;
    uint32_t pid = 0, tid = 0;
    const std::vector<CommAt>* list = nullptr;
    CommSpan span;
  };
  constexpr size_t kRecent = 4;
  thread_local Last recent[kRecent];
  thread_local size_t next = 0;
  Last* last = nullptr;
  for (Last& l : recent) {
    if (serial_ != 0 && l.serial == serial_ && l.pid == pid && l.tid == tid) {
      if (time >= l.span.from && time < l.span.to) return l.span;
      last = &l;
      break;
    }
  }
  const std::vector<CommAt>* list = nullptr;
  if (last != nullptr) {
    list = last->list;
  } else {
    if (auto it = comms_.find(tid); it != comms_.end()) {
      list = &it->second;
    } else if (auto it2 = comms_.find(pid); it2 != comms_.end()) {
      list = &it2->second;
    }
  }
  const CommSpan span = list != nullptr ? comm_in(*list, time) : CommSpan{};
  if (serial_ != 0) {
    if (last == nullptr) last = &recent[next++ % kRecent];
    *last = Last{serial_, pid, tid, list, span};
  }
  return span;
}

}  // namespace bpfprof::symbols
