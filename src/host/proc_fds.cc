// SPDX-License-Identifier: Apache-2.0
#include "host/proc_fds.h"

#include <dirent.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>

#include "base/text_file.h"

namespace bpfprof::host {

uint64_t for_each_process_fd(const std::string& proc, const std::function<void(const ProcFd&)>& fn) {
  uint64_t unreadable = 0;
  std::unique_ptr<DIR, int (*)(DIR*)> procs(::opendir(proc.c_str()), &::closedir);
  while (dirent* p = procs ? ::readdir(procs.get()) : nullptr) {
    if (p->d_name[0] < '1' || p->d_name[0] > '9') continue;
    const std::string fd_dir = proc + "/" + p->d_name + "/fd";
    std::unique_ptr<DIR, int (*)(DIR*)> fds(::opendir(fd_dir.c_str()), &::closedir);
    if (!fds) {
      if (errno != ENOENT && errno != ESRCH) unreadable++;  // else it exited meanwhile
      continue;
    }
    ProcFd f;
    f.pid = std::atoi(p->d_name);
    f.pid_dir = p->d_name;
    while (dirent* e = ::readdir(fds.get())) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      char target[64];
      const ssize_t n = ::readlinkat(::dirfd(fds.get()), e->d_name, target, sizeof target);
      if (n <= 0) continue;  // closed meanwhile
      f.fd = e->d_name;
      f.target = std::string_view(target, static_cast<size_t>(n));
      fn(f);
    }
  }
  return unreadable;
}

std::string process_comm(const std::string& proc, std::string_view pid) {
  auto text = read_text_file(proc + "/" + std::string(pid) + "/comm");
  std::string c = text.ok() ? *text : std::string();
  while (!c.empty() && c.back() == '\n') c.pop_back();
  return c;
}

}  // namespace bpfprof::host
