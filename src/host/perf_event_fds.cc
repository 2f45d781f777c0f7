// SPDX-License-Identifier: Apache-2.0
// The programs attached through a perf event, found through the fds that
// hold the events (what `bpftool perf` lists).
#include <signal.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <set>
#include <utility>
#include <vector>

#include "bpf/attach.h"
#include "host/attach_internal.h"
#include "host/attach_points.h"
#include "host/proc_fds.h"

namespace bpfprof::host {

using perfdata::AttachEntry;

PerfFdScan scan_perf_event_fds(uint32_t source, uint64_t time_ns, const std::string& proc) {
  PerfFdScan scan;
  struct Found {
    bpf::LinkInfo link;
    uint32_t pid;
    std::string comm;
  };
  std::vector<Found> found;
  int last_pid = -1;
  std::string comm;
  scan.unreadable = for_each_process_fd(proc, [&](const ProcFd& f) {
    if (f.target != "anon_inode:[perf_event]") return;
    const bpf::FdQuery q = bpf::perf_event_fd_query(f.pid, std::atoi(std::string(f.fd).c_str()));
    // ENOENT says both "no program on it" and "no such process".
    const bool exited = q.err == ENOENT && ::kill(f.pid, 0) != 0 && errno == ESRCH;
    if ((q.err == ENOENT && !exited) || q.err == EOPNOTSUPP) return;  // no program; perf_event
    if (q.err != 0) {
      scan.lost++;  // exited, EBADF: gone between the listing and the query
      return;
    }
    if (f.pid != last_pid) {
      last_pid = f.pid;
      comm = process_comm(proc, f.pid_dir);
    }
    found.push_back(Found{q.link, static_cast<uint32_t>(f.pid), comm});
  });
  AttachContext ctx;
  std::vector<bpf::LinkInfo> links;
  for (const Found& f : found) links.push_back(f.link);
  detail::find_categories(links, ctx);
  std::set<std::pair<uint32_t, std::string>> seen;
  for (Found& f : found) {
    AttachEntry e{f.link.prog_id, 0, source, time_ns, link_point(f.link, ctx), f.pid, std::move(f.comm)};
    if (seen.emplace(e.prog_id, e.point).second) scan.entries.push_back(std::move(e));
  }
  return scan;
}

}  // namespace bpfprof::host
