// SPDX-License-Identifier: Apache-2.0
#include "capture/capture_records.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace bpfprof::capture {
namespace {

// The most one array of one capture may grow to: far above any program (the
// kernel caps a program at 1M instructions), and a guard against a record
// that claims an absurd size.
constexpr uint64_t kMaxArrayBytes = 256u << 20;

template <class T>
bool read_pod(std::span<const std::byte> rec, T& out) {
  if (rec.size() < sizeof(T)) return false;
  std::memcpy(&out, rec.data(), sizeof(T));
  return true;
}

// The one place a capture becomes a bpf_prog_info entry: the fields the
// enricher's bpf_obj_get_info_by_fd would report, arrays as it stores them.
bpf::ProgInfo assemble_prog_info(const capture_prog& p, std::vector<CapturedFunc>& funcs,
                                 std::vector<bpf::MapInfo>& maps,
                                 std::array<CaptureAssembler::Pieces, CAPTURE_NR_ARRAYS>& arrays) {
  bpf::ProgInfo out;
  bpf_prog_info& i = out.info;
  i.type = p.type;
  i.id = p.hdr.id;
  std::memcpy(i.tag, p.tag, sizeof i.tag);
  std::memcpy(i.name, p.name, sizeof i.name);
  i.load_time = p.load_time;
  i.created_by_uid = p.created_by_uid;
  i.xlated_prog_len = p.xlated_prog_len;
  i.nr_map_ids = p.nr_map_ids;
  i.gpl_compatible = (p.flags & CAPTURE_GPL) ? 1 : 0;
  i.btf_id = p.btf_id;
  i.verified_insns = p.verified_insns;
  i.attach_btf_obj_id = p.attach_btf_obj_id;
  i.attach_btf_id = p.attach_btf_id;
  i.func_info_rec_size = sizeof(bpf_func_info);
  i.line_info_rec_size = sizeof(bpf_line_info);
  i.jited_line_info_rec_size = sizeof(uint64_t);

  const std::vector<std::byte>& image = arrays[CAPTURE_JITED_INSNS].data;
  out.jited_insns.resize(image.size());
  if (!image.empty()) std::memcpy(out.jited_insns.data(), image.data(), image.size());
  for (const CapturedFunc& f : funcs) {
    out.jited_ksyms.push_back(f.addr);
    out.jited_func_lens.push_back(f.len);
    out.prog_tags.push_back(f.tag);
  }
  out.func_info = std::move(arrays[CAPTURE_FUNC_INFO].data);
  out.line_info = std::move(arrays[CAPTURE_LINE_INFO].data);
  const std::vector<std::byte>& jited_lines = arrays[CAPTURE_JITED_LINE_INFO].data;
  out.jited_line_info.resize(jited_lines.size() / sizeof(uint64_t));
  if (!out.jited_line_info.empty()) {
    std::memcpy(out.jited_line_info.data(), jited_lines.data(),
                out.jited_line_info.size() * sizeof(uint64_t));
  }
  i.jited_prog_len = static_cast<uint32_t>(out.jited_insns.size());
  i.nr_jited_ksyms = static_cast<uint32_t>(out.jited_ksyms.size());
  i.nr_jited_func_lens = static_cast<uint32_t>(out.jited_func_lens.size());
  i.nr_prog_tags = static_cast<uint32_t>(out.prog_tags.size());
  i.nr_func_info = p.nr_func_info;
  i.nr_line_info = p.nr_line_info;
  i.nr_jited_line_info = p.nr_jited_line_info;
  out.maps = std::move(maps);
  return out;
}

// A fixed char array of the kernel's, up to its first NUL (none: all of it).
template <size_t N>
std::string fixed_string(const char (&a)[N]) {
  size_t n = 0;
  while (n < N && a[n] != '\0') n++;
  return std::string(a, n);
}

bpf::MapInfo captured_map(const capture_map& r) {
  bpf::MapInfo m;
  m.id = r.map_id;
  m.type = r.type;
  m.key_size = r.key_size;
  m.value_size = r.value_size;
  m.max_entries = r.max_entries;
  m.flags = r.map_flags;
  m.name = fixed_string(r.name);
  m.addr = r.addr;
  m.value_addr = r.value_addr;
  return m;
}

CapturedLink captured_link(const capture_link& r) {
  CapturedLink l;
  l.link_id = r.hdr.id;
  l.prog_id = r.prog_id;
  l.link_type = r.link_type;
  l.attach_type = r.attach_type;
  l.flags = r.flags;
  l.time_ns = r.time;
  l.cgroup_id = r.cgroup_id;
  l.ifindex = r.ifindex;
  l.netns_ino = r.netns_ino;
  l.xdp_mode = r.xdp_mode;
  l.target_obj_id = r.target_obj_id;
  l.target_btf_id = r.target_btf_id;
  l.name = fixed_string(r.name);
  l.category = fixed_string(r.category);
  l.ifname = fixed_string(r.ifname);
  return l;
}

}  // namespace

void CaptureAssembler::add(std::span<const std::byte> rec) {
  capture_header h{};
  if (!read_pod(rec, h)) {
    bad_records_++;
    return;
  }
  switch (h.kind) {
    case CAPTURE_FUNC: {
      capture_func f{};
      if (!read_pod(rec, f)) break;
      auto& funcs = partial_[h.id].funcs;
      if (f.index != funcs.size()) break;  // pieces come in order on one CPU
      CapturedFunc out;
      out.addr = f.addr;
      out.len = f.jited_len;
      std::memcpy(out.tag.data(), f.tag, out.tag.size());
      funcs.push_back(out);
      return;
    }
    case CAPTURE_MAP: {
      capture_map m{};
      if (!read_pod(rec, m) || m.map_id == 0) break;
      if (m.index == CAPTURE_MAP_BOUND) {
        add_bound_map(captured_map(m), h.id);
        return;
      }
      auto& maps = partial_[h.id].maps;
      if (m.index != maps.size() || maps.size() >= CAPTURE_MAPS_MAX) break;  // in order, bounded
      maps.push_back(captured_map(m));
      return;
    }
    case CAPTURE_MAP_VALUE: {
      // Sized by its own len, never past the record, the bound or the value.
      constexpr size_t head = offsetof(capture_map_value, data);
      capture_map_value v{};
      if (rec.size() < head) break;
      std::memcpy(&v, rec.data(), head);
      if (v.map_id == 0 || v.btf_value_type_id == 0 || v.len > CAPTURE_VALUE_MAX ||
          v.len > v.value_size || rec.size() - head < v.len) {
        break;
      }
      CapturedValue out;
      out.map_id = v.map_id;
      out.btf_id = v.btf_id;
      out.btf_value_type_id = v.btf_value_type_id;
      out.value_size = v.value_size;
      const std::span<const std::byte> data = rec.subspan(head, v.len);
      out.bytes.assign(data.begin(), data.end());
      values_.try_emplace(v.map_id, std::move(out));
      return;
    }
    case CAPTURE_CHUNK: {
      capture_chunk c{};
      if (!read_pod(rec, c) || c.array >= CAPTURE_NR_ARRAYS || c.len > CAPTURE_CHUNK_MAX ||
          rec.size() - sizeof c < c.len) {
        break;
      }
      add_chunk(c, rec.subspan(sizeof c, c.len));
      return;
    }
    case CAPTURE_MISSED: {
      missed_++;
      if (!captured_.count(h.id)) incomplete_.insert(h.id);
      capture_missed m{};
      if (read_pod(rec, m) && m.cgroup_id && loader_seen_.insert(h.id).second) {
        loader_cgroups_.emplace_back(h.id, m.cgroup_id);
      }
      return;
    }
    case CAPTURE_PROG: {
      capture_prog p{};
      if (!read_pod(rec, p)) break;
      add_prog(p);
      return;
    }
    case CAPTURE_LINK: {
      capture_link l{};
      if (!read_pod(rec, l) || !l.prog_id) break;
      // Only a BPF_PROG_ATTACH comes without a link id.
      if ((l.hdr.id == 0) != ((l.flags & CAPTURE_LINK_PROG_ATTACH) != 0)) break;
      links_.push_back(captured_link(l));
      return;
    }
    case CAPTURE_MISSED_LINK:
      if (h.id == 0) break;
      missed_links_.push_back(h.id);
      return;
    case CAPTURE_TEST_RUN: {
      capture_test_run t{};
      if (!read_pod(rec, t) || t.hdr.id == 0) break;
      test_runs_.emplace(t.hdr.id, t.time);  // the first run seen stays
      return;
    }
    default:
      break;
  }
  bad_records_++;
}

void CaptureAssembler::add_chunk(const capture_chunk& c, std::span<const std::byte> data) {
  // An array's pieces come in offset order from one CPU: each continues what
  // arrived. BTF is keyed by its own id, and a piece at offset 0 starts its
  // blob over (an earlier send of it that failed part way never completes).
  Pieces* dst;
  if (c.array == CAPTURE_BTF) {
    dst = &partial_btf_[c.hdr.id];
    if (c.offset == 0) *dst = Pieces{};
  } else {
    dst = &partial_[c.hdr.id].arrays[c.array];
  }
  if (dst->gap) return;
  if (c.offset != dst->data.size() || dst->data.size() + data.size() > kMaxArrayBytes) {
    // A piece out of order: the array cannot match what its program
    // announces, so the program ends incomplete (and is enriched by id).
    *dst = Pieces{};
    dst->gap = true;
    return;
  }
  dst->data.insert(dst->data.end(), data.begin(), data.end());
}

void CaptureAssembler::add_prog(const capture_prog& p) {
  auto node = partial_.extract(p.hdr.id);
  Partial part = node ? std::move(node.mapped()) : Partial{};
  if (captured_.count(p.hdr.id)) {
    // Program ids are never reused: a second capture of one is not a load.
    bad_records_++;
    return;
  }
  if (p.cgroup_id && loader_seen_.insert(p.hdr.id).second) {
    loader_cgroups_.emplace_back(p.hdr.id, p.cgroup_id);
  }
  auto arrived = [](const Pieces& a, uint64_t size) { return !a.gap && a.data.size() == size; };
  bool whole = !(p.flags & CAPTURE_INCOMPLETE) && part.funcs.size() == p.nr_funcs &&
               part.maps.size() == p.nr_maps && p.nr_maps == p.nr_map_ids;
  for (int a = 0; a < CAPTURE_BTF; a++) whole = whole && arrived(part.arrays[a], p.sent[a]);
  if (p.flags & CAPTURE_BTF_SENT) {
    auto btf = partial_btf_.extract(p.btf_id);
    if (btf && arrived(btf.mapped(), p.btf_size)) {
      btfs_.emplace(p.btf_id, bpf::BtfBlob{p.btf_id, std::move(btf.mapped().data)});
    } else {
      whole = false;
    }
  }
  if (!whole) {
    incomplete_.insert(p.hdr.id);
    return;
  }
  infos_.insert_or_assign(p.hdr.id, assemble_prog_info(p, part.funcs, part.maps, part.arrays));
  captured_.insert(p.hdr.id);
  incomplete_.erase(p.hdr.id);
}

void CaptureAssembler::add_bound_map(bpf::MapInfo m, uint32_t prog) {
  // Bound after the load's exit, so after its CAPTURE_PROG: a program not
  // captured whole is read by id later, bound maps and all.
  auto it = infos_.find(prog);
  if (it == infos_.end() || !it->second.maps) return;
  std::vector<bpf::MapInfo>& maps = *it->second.maps;
  if (!bpf::add_map(maps, std::move(m))) return;  // already used: the kernel binds nothing
  it->second.info.nr_map_ids = static_cast<uint32_t>(maps.size());  // as bpf_prog_info says now
  maps_bound_.insert(prog);
}

void CaptureAssembler::take_bound_maps(std::map<uint32_t, std::vector<bpf::MapInfo>>& out) {
  for (uint32_t prog : maps_bound_) {
    if (auto it = infos_.find(prog); it != infos_.end() && it->second.maps)
      out[prog] = *it->second.maps;
  }
  maps_bound_.clear();
}

const CapturedValue* CaptureAssembler::map_value(uint32_t map_id) const {
  auto it = values_.find(map_id);
  return it == values_.end() ? nullptr : &it->second;
}

void CaptureAssembler::take_links(std::vector<CapturedLink>& links,
                                  std::vector<uint32_t>& missed_link_ids) {
  for (CapturedLink& l : links_) links.push_back(std::move(l));
  links_.clear();
  missed_link_ids.insert(missed_link_ids.end(), missed_links_.begin(), missed_links_.end());
  missed_links_.clear();
}

void CaptureAssembler::take_loader_cgroups(std::vector<std::pair<uint32_t, uint64_t>>& out) {
  out.insert(out.end(), loader_cgroups_.begin(), loader_cgroups_.end());
  loader_cgroups_.clear();
}

void CaptureAssembler::finish() {
  for (const auto& [id, part] : partial_) {
    if (!captured_.count(id)) incomplete_.insert(id);
  }
  partial_.clear();
  partial_btf_.clear();
}

}  // namespace bpfprof::capture
