// SPDX-License-Identifier: Apache-2.0
#include "host/synthesize.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "bpf/disasm.h"
#include "bpf/map_loads.h"
#include "bpf/query.h"
#include "host/kernel_maps.h"
#include "host/proc_maps.h"
#include "perf/abi.h"

namespace bpfprof::host {
namespace {

constexpr size_t kFlushBytes = 1 << 20;

// The kernel addresses of the maps program `fd` loads, from its translated
// instructions and its JIT image (bpf/map_loads.h): what the in-kernel
// capture reads from struct bpf_map for programs loaded while it runs, and
// what annotate names a movabs after. Whether every load was paired (false:
// the maps keep no address). x86-64 only: the pairing knows that JIT's
// registers and its movabs; an arm64 JIT builds a 64-bit value from
// mov/movk, and on such a host these programs' maps are left without
// addresses (not tried, not counted).
#if defined(__x86_64__)
bool pair_map_addresses(bpf::ProgInfo& info, int fd) {
  auto xlated = bpf::read_xlated_insns(fd);
  if (!xlated.ok()) return false;
  auto insns = bpf::disassemble(bpf::Arch::kX86_64, info.jited_insns, 0);
  if (!insns.ok()) return false;
  std::vector<bpf::Movabs> movabs;
  for (const bpf::Insn& i : *insns) {
    if (auto m = bpf::parse_movabs(i.text)) movabs.push_back(std::move(*m));
  }
  const std::optional<bpf::MapAddresses> found = bpf::pair_map_loads_x86_64(*xlated, movabs);
  if (!found) return false;
  bpf::apply_map_addresses(*info.maps, *found);
  return true;
}
#endif

std::vector<int> numeric_entries(const std::string& dir) {
  std::vector<int> out;
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), &::closedir);
  if (!d) return out;
  while (dirent* e = ::readdir(d.get())) {
    int v = 0;
    const char* end = e->d_name + std::strlen(e->d_name);
    auto [p, ec] = std::from_chars(e->d_name, end, v);
    if (ec == std::errc() && p == end && v > 0) out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string trim_newline(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// One process: FORK + COMM per thread, MMAP2 for the leader's exec maps.
// Processes that exit while we read them are skipped silently.
void synthesize_process(SynthBuffer& out, const std::string& proc, int pid) {
  const std::string base = proc + "/" + std::to_string(pid);
  auto status_text = read_text_file(base + "/status");
  if (!status_text.ok()) return;
  auto status = parse_status(*status_text);
  if (!status || status->tgid != pid) return;
  const auto tgid = static_cast<uint32_t>(pid);
  const auto ppid = static_cast<uint32_t>(status->ppid);
  std::vector<int> tids = numeric_entries(base + "/task");
  if (tids.empty()) tids.push_back(pid);
  for (int tid : tids) {
    auto comm = read_text_file(base + "/task/" + std::to_string(tid) + "/comm");
    std::string name = comm.ok() ? trim_newline(*comm) : status->comm;
    const bool leader = tid == pid;
    out.fork(tgid, leader ? ppid : tgid, static_cast<uint32_t>(tid), leader ? ppid : tgid);
    out.comm(tgid, static_cast<uint32_t>(tid), name);
  }
  auto maps = read_text_file(base + "/maps");
  if (!maps.ok()) return;
  for (const ExecMapping& m : exec_mappings(*maps)) {
    SynthBuffer::Mmap2Fields f;
    f.pid = f.tid = tgid;
    f.start = m.entry.start;
    f.len = m.entry.end - m.entry.start;
    f.pgoff = m.entry.pgoff;
    f.maj = m.entry.maj;
    f.min = m.entry.min;
    f.ino = m.entry.ino;
    f.prot = m.entry.prot;
    f.flags = m.entry.flags;
    out.mmap2(perf::kMiscUser, f, m.filename);
  }
}

void walk_cgroups(SynthBuffer& out, const std::string& dir, const std::string& path, size_t& count,
                  Status& flushed, const std::function<Status()>& flush) {
  auto id = cgroup_id(dir);
  if (!id) return;  // removed meanwhile
  out.cgroup(*id, path);
  count++;
  if (out.bytes().size() >= kFlushBytes && flushed.ok()) flushed = flush();
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), &::closedir);
  if (!d) return;
  std::vector<std::string> children;
  while (dirent* e = ::readdir(d.get())) {
    if (e->d_type != DT_DIR || std::strcmp(e->d_name, ".") == 0 ||
        std::strcmp(e->d_name, "..") == 0) {
      continue;
    }
    children.emplace_back(e->d_name);
  }
  std::sort(children.begin(), children.end());
  for (const std::string& c : children) {
    walk_cgroups(out, dir + "/" + c, path == "/" ? "/" + c : path + "/" + c, count, flushed, flush);
  }
}

bool is_trampoline(const std::string& name) {
  return name.starts_with("bpf_trampoline_") || name.starts_with("bpf_dispatcher_");
}

}  // namespace

std::optional<uint64_t> cgroup_id(const std::string& path) {
  struct {
    struct file_handle fh;
    uint64_t id;
  } handle{};
  handle.fh.handle_bytes = sizeof(uint64_t);
  int mount_id = 0;
  if (::name_to_handle_at(AT_FDCWD, path.c_str(), &handle.fh, &mount_id, 0) == 0 &&
      handle.fh.handle_bytes == sizeof(uint64_t)) {
    uint64_t id = 0;
    std::memcpy(&id, handle.fh.f_handle, sizeof id);
    return id;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
  return static_cast<uint64_t>(st.st_ino);
}

Status synthesize_kernel(SynthBuffer& out, const Result<KernelText>& kernel_text) {
  if (!kernel_text.ok()) return kernel_text.error();
  const KernelText& text = *kernel_text;
  std::vector<ModuleMap> modules = read_modules();
  uint64_t end = text.end;
  if (end == 0) {
    // No _etext: up to the first module above the kernel, as perf does.
    for (const ModuleMap& m : modules) {
      if (m.start > text.start && (end == 0 || m.start < end)) end = m.start;
    }
  }
  const uint64_t len = end > text.start ? end - text.start : 0;
  const auto kernel_pid = static_cast<uint32_t>(-1);
  out.mmap(perf::kMiscKernel, kernel_pid, 0, text.start, len, text.start,
           "[kernel.kallsyms]" + text.ref_name);
  for (const ModuleMap& m : modules) {
    if (m.start == 0) continue;  // addresses hidden (kptr_restrict)
    out.mmap(perf::kMiscKernel, kernel_pid, 0, m.start, m.size, 0, "[" + m.name + "]");
  }
  return ok_status();
}

Status synthesize_threads(SynthBuffer& out, const std::function<Status()>& flush,
                          const std::string& proc) {
  for (int pid : numeric_entries(proc)) {
    synthesize_process(out, proc, pid);
    if (out.bytes().size() >= kFlushBytes) BPFPROF_TRY(flush());
  }
  return ok_status();
}

std::string unescape_mountinfo(std::string_view s) {
  auto octal = [&](size_t i, char max) { return s[i] >= '0' && s[i] <= max; };
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '\\' && i + 3 < s.size() && octal(i + 1, '3') && octal(i + 2, '7') &&
        octal(i + 3, '7')) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::optional<Cgroup2Mount> find_cgroup2_mount(std::string_view mountinfo) {
  while (!mountinfo.empty()) {
    const size_t nl = mountinfo.find('\n');
    std::string_view line = mountinfo.substr(0, nl);
    mountinfo = nl == std::string_view::npos ? std::string_view() : mountinfo.substr(nl + 1);
    // id parent maj:min root mount-point options [optional...] - fstype source super-options
    const size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    if (!line.substr(dash + 3).starts_with("cgroup2 ")) continue;
    std::vector<std::string_view> fields;
    std::string_view rest = line.substr(0, dash);
    while (!rest.empty()) {
      const size_t sp = rest.find(' ');
      fields.push_back(rest.substr(0, sp));
      rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
    }
    if (fields.size() < 5) continue;
    Cgroup2Mount m;
    m.root = unescape_mountinfo(fields[3]);
    m.mount_point = unescape_mountinfo(fields[4]);
    return m;
  }
  return std::nullopt;
}

Result<size_t> synthesize_cgroups(SynthBuffer& out, const Cgroup2Mount& mount,
                                  const std::function<Status()>& flush) {
  size_t count = 0;
  Status flushed = ok_status();
  std::string root = mount.root.empty() ? "/" : mount.root;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  walk_cgroups(out, mount.mount_point, root, count, flushed, flush);
  if (!flushed.ok()) return flushed.error();
  return count;
}

void collect_prog_load_ids(const perf::RingBuffer::Chunk& c, std::set<uint32_t>& ids) {
  collect_bpf_event_ids(c, perf::kBpfEventProgLoad, ids);
}

void synthesize_program(SynthBuffer& out, uint32_t id, const bpf::ProgInfo& p) {
  const size_t n = std::min(p.jited_ksyms.size(), p.ksym_names.size());
  for (size_t i = 0; i < n; i++) {
    const uint32_t len = i < p.jited_func_lens.size() ? p.jited_func_lens[i] : 0;
    out.ksymbol(p.jited_ksyms[i], len, perf::kKsymTypeBpf, 0, p.ksym_names[i]);
  }
  out.bpf_event(perf::kBpfEventProgLoad, id, p.tag());
}

void collect_bpf_event_ids(const perf::RingBuffer::Chunk& c, uint16_t event_type,
                           std::set<uint32_t>& ids) {
  // Copies each record's first 16 bytes across a possible wrap.
  auto read = [&](size_t off, void* dst, size_t n) {
    auto* d = static_cast<std::byte*>(dst);
    for (size_t i = 0; i < n; i++) {
      size_t at = off + i;
      d[i] = at < c.first.size() ? c.first[at] : c.second[at - c.first.size()];
    }
  };
  const size_t total = c.size();
  size_t off = 0;
  while (total - off >= 8) {
    uint32_t type = 0;
    uint16_t size = 0;
    read(off, &type, 4);
    read(off + 6, &size, 2);
    if (size < 8 || size > total - off) return;
    if (type == perf::kRecordBpfEvent && size >= 16) {
      uint16_t ev_type = 0;
      uint32_t id = 0;
      read(off + 8, &ev_type, 2);
      read(off + 12, &id, 4);
      if (ev_type == event_type) ids.insert(id);
    }
    off += size;
  }
}

BpfPlan plan_bpf_synthesis(const std::vector<uint32_t>& enumerated,
                           const std::set<uint32_t>& live) {
  BpfPlan plan;
  for (uint32_t id : enumerated) (live.count(id) ? plan.live : plan.synthesize).push_back(id);
  return plan;
}

Result<BpfSynthesis> synthesize_bpf(SynthBuffer& out, const std::vector<bpf::KallsymsEntry>& ksyms,
                                    const std::function<std::set<uint32_t>()>& live_ids) {
  BpfSynthesis result;
  auto ids = bpf::list_prog_ids();
  if (!ids.ok()) return bpf::explain_bpf_error(std::move(ids).error());
  std::map<uint32_t, bpf::ProgInfo> infos;
  std::map<uint32_t, bpf::BtfBlob> btfs;
  std::vector<uint32_t> present;
  bpf::ReadBuffers buffers;
  for (uint32_t id : *ids) {
    auto fd = bpf::prog_fd_by_id(id);
    if (!fd.ok()) {
      if (fd.error().code == Errc::kNotFound) {
        result.gone++;
        continue;
      }
      return bpf::explain_bpf_error(std::move(fd).error());
    }
    auto info = bpf::read_prog_info(fd->get(), buffers);
    if (!info.ok()) return bpf::explain_bpf_error(std::move(info).error());
#if defined(__x86_64__)
    if (info->maps && !info->maps->empty() && !pair_map_addresses(*info, fd->get())) {
      result.maps_unpaired++;
    }
#endif
    const uint32_t btf_id = info->info.btf_id;
    if (btf_id && !btfs.count(btf_id)) {
      if (auto btf = bpf::read_btf(btf_id, buffers); btf.ok())
        btfs.emplace(btf_id, std::move(btf).value());
    }
    fd->reset();
    auto btf_it = btfs.find(btf_id);
    bpf::resolve_ksym_names(*info, ksyms, btf_it == btfs.end() ? nullptr : &btf_it->second);
    present.push_back(id);
    infos.emplace(id, std::move(info).value());
  }
  // Only now look at the live stream: any program enumerated above has had its
  // PROG_LOAD emitted by now (the kernel emits it right after allocating the id).
  const BpfPlan plan = plan_bpf_synthesis(present, live_ids());
  result.live = plan.live;
  for (uint32_t id : plan.synthesize) {
    synthesize_program(out, id, infos.at(id));
    result.synthesized.push_back(id);
  }
  const auto page = static_cast<uint32_t>(::sysconf(_SC_PAGESIZE));
  for (const bpf::KallsymsEntry& k : ksyms) {
    if (!is_trampoline(k.name) || k.addr == 0) continue;
    out.ksymbol(k.addr, page, perf::kKsymTypeBpf, 0, k.name);
    result.trampolines++;
  }
  for (auto& [id, info] : infos) result.infos.push_back(std::move(info));
  for (auto& [id, btf] : btfs) result.btfs.push_back(std::move(btf));
  return result;
}

}  // namespace bpfprof::host
