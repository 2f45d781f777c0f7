// SPDX-License-Identifier: Apache-2.0
#include "host/owners.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "bpf/query.h"
#include "host/attach_internal.h"
#include "host/kernel_maps.h"
#include "host/proc_fds.h"
#include "host/synthesize.h"

namespace bpfprof::host {
namespace {

using detail::open_dir;
using perfdata::ProgramHolder;

std::string link_target(const std::string& path) {
  char buf[64];
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// What an fd is, from its /proc link: 0 when neither a program nor a link.
uint32_t fd_kind(std::string_view target) {
  if (target == "anon_inode:bpf-prog") return ProgramHolder::kProgFd;
  if (target == "anon_inode:bpf_link") return ProgramHolder::kLinkFd;
  return 0;
}

// The cgroup v2 id of process `pid` now; 0 when unknown.
uint64_t cgroup_of(const std::string& proc, const std::string& pid,
                   const std::optional<Cgroup2Mount>& cgroup2) {
  if (!cgroup2) return 0;
  auto text = read_text_file(proc + "/" + pid + "/cgroup");
  if (!text.ok()) return 0;
  const std::string dir = cgroup_dir_of(*text, *cgroup2);
  return dir.empty() ? 0 : cgroup_id(dir).value_or(0);
}

// Every non-directory under `dir` in a BPF filesystem.
void walk_pins(const std::string& dir, std::vector<std::string>& out, int depth = 0) {
  if (depth > 16) return;
  auto d = open_dir(dir);
  if (!d) return;
  while (dirent* e = ::readdir(d.get())) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    const std::string path = dir + "/" + e->d_name;
    if (e->d_type == DT_DIR) {
      walk_pins(path, out, depth + 1);
    } else if (e->d_type == DT_REG) {
      out.push_back(path);
    }
  }
}

}  // namespace

uint32_t fdinfo_prog_id(std::string_view fdinfo) {
  size_t at = 0;
  while (at < fdinfo.size()) {
    const size_t nl = fdinfo.find('\n', at);
    std::string_view line = fdinfo.substr(at, nl == std::string_view::npos ? nl : nl - at);
    at = nl == std::string_view::npos ? fdinfo.size() : nl + 1;
    if (!line.starts_with("prog_id:")) continue;
    line.remove_prefix(8);
    while (!line.empty() && (line.front() == '\t' || line.front() == ' ')) line.remove_prefix(1);
    uint32_t id = 0;
    std::from_chars(line.data(), line.data() + line.size(), id);
    return id;
  }
  return 0;
}

std::string cgroup_dir_of(std::string_view proc_cgroup, const Cgroup2Mount& cgroup2) {
  while (!proc_cgroup.empty()) {
    const size_t nl = proc_cgroup.find('\n');
    std::string_view line = proc_cgroup.substr(0, nl);
    proc_cgroup = nl == std::string_view::npos ? std::string_view() : proc_cgroup.substr(nl + 1);
    if (!line.starts_with("0::/")) continue;  // the v2 hierarchy's line
    std::string_view path = line.substr(3);
    std::string_view root = cgroup2.root;
    if (root.size() > 1) {
      if (!path.starts_with(root) || (path.size() > root.size() && path[root.size()] != '/')) return {};
      path.remove_prefix(root.size());
    }
    if (path == "/") path = {};
    return cgroup2.mount_point + std::string(path);
  }
  return {};
}

std::vector<std::string> bpffs_mounts(std::string_view mountinfo) {
  std::vector<std::string> out;
  while (!mountinfo.empty()) {
    const size_t nl = mountinfo.find('\n');
    std::string_view line = mountinfo.substr(0, nl);
    mountinfo = nl == std::string_view::npos ? std::string_view() : mountinfo.substr(nl + 1);
    const size_t dash = line.find(" - ");
    if (dash == std::string_view::npos || !line.substr(dash + 3).starts_with("bpf ")) continue;
    // id parent maj:min root mount-point ...
    std::string_view rest = line.substr(0, dash);
    for (int field = 0; field < 4 && !rest.empty(); field++) {
      const size_t sp = rest.find(' ');
      rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
    }
    const std::string_view mount_point = rest.substr(0, rest.find(' '));
    if (!mount_point.empty()) out.push_back(unescape_mountinfo(mount_point));
  }
  return out;
}

perfdata::OwnersSection scan_program_owners(const std::vector<uint32_t>& ids,
                                            const std::optional<Cgroup2Mount>& cgroup2,
                                            const std::string& proc) {
  perfdata::OwnersSection out;
  out.scanned = ids;
  std::sort(out.scanned.begin(), out.scanned.end());
  const std::set<uint32_t> wanted(ids.begin(), ids.end());
  std::map<std::pair<uint32_t, uint32_t>, ProgramHolder> found;  // (prog, pid)
  auto add = [&](uint32_t prog, uint32_t pid, uint32_t flag, const std::string& comm,
                 uint64_t cgroup) {
    if (!wanted.count(prog)) return;
    ProgramHolder& h = found[{prog, pid}];
    h.prog_id = prog;
    h.pid = pid;
    h.flags |= flag;
    if (h.comm.empty()) h.comm = comm;
    if (!h.cgroup_id) h.cgroup_id = cgroup;
  };
  if (wanted.empty()) return out;
  // A process's comm and cgroup, read at its first fd of interest.
  int last_pid = -1;
  std::string comm;
  uint64_t cgroup = 0;
  for_each_process_fd(proc, [&](const ProcFd& f) {
    const uint32_t kind = fd_kind(f.target);
    if (kind == 0) return;
    auto info = read_text_file(proc + "/" + std::string(f.pid_dir) + "/fdinfo/" + std::string(f.fd));
    if (!info.ok()) return;
    if (f.pid != last_pid) {
      last_pid = f.pid;
      comm = process_comm(proc, f.pid_dir);
      cgroup = cgroup_of(proc, std::string(f.pid_dir), cgroup2);
    }
    add(fdinfo_prog_id(*info), static_cast<uint32_t>(f.pid), kind, comm, cgroup);
  });
  // Pins: the object's fd, opened for a moment, says which program it holds.
  auto mountinfo = read_text_file("/proc/self/mountinfo");
  std::vector<std::string> pins;
  if (mountinfo.ok()) {
    for (const std::string& m : bpffs_mounts(*mountinfo)) walk_pins(m, pins);
  }
  for (const std::string& path : pins) {
    auto fd = bpf::pinned_object(path);
    if (!fd.ok()) continue;
    const std::string n = std::to_string(fd->get());
    if (fd_kind(link_target("/proc/self/fd/" + n)) == 0) continue;
    auto info = read_text_file("/proc/self/fdinfo/" + n);
    if (info.ok()) add(fdinfo_prog_id(*info), 0, ProgramHolder::kPinned, "", 0);
  }
  for (auto& [key, h] : found) out.holders.push_back(std::move(h));
  return out;
}

}  // namespace bpfprof::host
