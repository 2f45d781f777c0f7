// SPDX-License-Identifier: Apache-2.0
#include "record/synthesize.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "bpf/query.h"
#include "perf/abi.h"
#include "record/event_set.h"
#include "record/kernel_maps.h"
#include "record/proc_maps.h"

namespace bpfprof::record {
namespace {

constexpr size_t kFlushBytes = 1 << 20;

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

bool is_trampoline(const std::string& name) {
  return name.starts_with("bpf_trampoline_") || name.starts_with("bpf_dispatcher_");
}

}  // namespace

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

void collect_prog_load_ids(const perf::RingBuffer::Chunk& c, std::set<uint32_t>& ids) {
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
      if (ev_type == perf::kBpfEventProgLoad) ids.insert(id);
    }
    off += size;
  }
}

BpfPlan plan_bpf_synthesis(const std::vector<uint32_t>& enumerated, const std::set<uint32_t>& live) {
  BpfPlan plan;
  for (uint32_t id : enumerated) (live.count(id) ? plan.live : plan.synthesize).push_back(id);
  return plan;
}

Result<BpfSynthesis> synthesize_bpf(SynthBuffer& out, const std::vector<bpf::KallsymsEntry>& ksyms,
                                    const std::function<std::set<uint32_t>()>& live_ids) {
  BpfSynthesis result;
  auto ids = bpf::list_prog_ids();
  if (!ids.ok()) return explain_bpf_error(std::move(ids).error());
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
      return explain_bpf_error(std::move(fd).error());
    }
    auto info = bpf::read_prog_info(fd->get(), buffers);
    if (!info.ok()) return explain_bpf_error(std::move(info).error());
    const uint32_t btf_id = info->info.btf_id;
    if (btf_id && !btfs.count(btf_id)) {
      if (auto btf = bpf::read_btf(btf_id, buffers); btf.ok()) btfs.emplace(btf_id, std::move(btf).value());
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
    const bpf::ProgInfo& p = infos.at(id);
    const size_t n = std::min(p.jited_ksyms.size(), p.ksym_names.size());
    for (size_t i = 0; i < n; i++) {
      const uint32_t len = i < p.jited_func_lens.size() ? p.jited_func_lens[i] : 0;
      out.ksymbol(p.jited_ksyms[i], len, perf::kKsymTypeBpf, 0, p.ksym_names[i]);
    }
    out.bpf_event(perf::kBpfEventProgLoad, id, p.tag());
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

}  // namespace bpfprof::record
