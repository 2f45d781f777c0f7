// SPDX-License-Identifier: Apache-2.0
// Program enumeration, bpf_prog_info and BTF fetches through libbpf. libbpf 1.x
// reports failure as -errno (ints) or NULL with errno set (pointers); each call
// site turns that into an Error naming the operation and the object.
#include "bpf/query.h"

#include <bpf/bpf.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <type_traits>

#include "base/text_file.h"

namespace bpfprof::bpf {
namespace {

// An array the second bpf_obj_get_info_by_fd call fills: where its pointer,
// count and record size live in bpf_prog_info, and the buffer we hand over.
struct ArraySpec {
  const char* name;
  __u64 bpf_prog_info::*ptr;
  __u32 bpf_prog_info::*count;
  __u32 bpf_prog_info::*rec_size;  // nullptr: fixed element size below
  uint32_t fixed_size;
};

// The arrays bpfprof stores (perf's PERF_BPIL set 0x1F9).
constexpr ArraySpec kArrays[] = {
    {"jited_prog_insns", &bpf_prog_info::jited_prog_insns, &bpf_prog_info::jited_prog_len,
     nullptr, 1},
    {"jited_ksyms", &bpf_prog_info::jited_ksyms, &bpf_prog_info::nr_jited_ksyms, nullptr,
     sizeof(uint64_t)},
    {"jited_func_lens", &bpf_prog_info::jited_func_lens, &bpf_prog_info::nr_jited_func_lens,
     nullptr, sizeof(uint32_t)},
    {"func_info", &bpf_prog_info::func_info, &bpf_prog_info::nr_func_info,
     &bpf_prog_info::func_info_rec_size, 0},
    {"line_info", &bpf_prog_info::line_info, &bpf_prog_info::nr_line_info,
     &bpf_prog_info::line_info_rec_size, 0},
    {"jited_line_info", &bpf_prog_info::jited_line_info, &bpf_prog_info::nr_jited_line_info,
     &bpf_prog_info::jited_line_info_rec_size, 0},
    {"prog_tags", &bpf_prog_info::prog_tags, &bpf_prog_info::nr_prog_tags, nullptr,
     BPF_TAG_SIZE},
    // Not stored as an array: the ids of the maps read_prog_info describes.
    {"map_ids", &bpf_prog_info::map_ids, &bpf_prog_info::nr_map_ids, nullptr, sizeof(uint32_t)},
};
constexpr size_t kNumArrays = sizeof kArrays / sizeof kArrays[0];
static_assert(kNumArrays == std::extent_v<decltype(ReadBuffers::arrays)>);

// Every pointer field of bpf_prog_info, including arrays we never request.
constexpr __u64 bpf_prog_info::*kPointerFields[] = {
    &bpf_prog_info::jited_prog_insns, &bpf_prog_info::xlated_prog_insns,
    &bpf_prog_info::map_ids,          &bpf_prog_info::jited_ksyms,
    &bpf_prog_info::jited_func_lens,  &bpf_prog_info::func_info,
    &bpf_prog_info::line_info,        &bpf_prog_info::jited_line_info,
    &bpf_prog_info::prog_tags,
};

// The first BTF read's buffer: a program's BTF fits (a few KiB), vmlinux's does not.
constexpr size_t kBtfFirstRead = 64 * 1024;

// A program uses at most MAX_USED_MAPS (64) maps, bound ones included.
constexpr uint32_t kMaxUsedMaps = 64;

// Guard against absurd counts from a confused kernel before allocating.
constexpr size_t kMaxArrayBytes = size_t{1} << 30;

uint32_t rec_size_of(const ArraySpec& a, const bpf_prog_info& info) {
  return a.rec_size ? info.*a.rec_size : a.fixed_size;
}

Status get_info(int fd, bpf_prog_info& info, const char* phase) {
  __u32 len = sizeof info;
  int rc = bpf_obj_get_info_by_fd(fd, &info, &len);
  if (rc < 0) {
    return make_sys_error(std::string("bpf_obj_get_info_by_fd (") + phase + ") on fd " +
                              std::to_string(fd),
                          -rc);
  }
  return ok_status();
}

// The maps with these ids (of program `prog_id`), each by bpf_map_info.
Result<std::vector<MapInfo>> maps_by_id(std::span<const uint32_t> ids, uint32_t prog_id) {
  std::vector<MapInfo> out;
  for (uint32_t id : ids) {
    const std::string who = "map " + std::to_string(id) + " of program " + std::to_string(prog_id);
    UniqueFd fd(bpf_map_get_fd_by_id(id));
    if (!fd.valid()) return make_sys_error("bpf_map_get_fd_by_id of " + who, errno);
    bpf_map_info m{};
    __u32 len = sizeof m;
    if (bpf_obj_get_info_by_fd(fd.get(), &m, &len) != 0) {
      return make_sys_error("bpf_obj_get_info_by_fd of " + who, errno);
    }
    MapInfo mi;
    mi.id = m.id;
    mi.type = m.type;
    mi.key_size = m.key_size;
    mi.value_size = m.value_size;
    mi.max_entries = m.max_entries;
    mi.flags = m.map_flags;
    mi.name.assign(m.name, strnlen(m.name, sizeof m.name));
    out.push_back(std::move(mi));
  }
  return out;
}

// Copies the filled bytes of a buffer into a vector of whole elements.
template <class T>
std::vector<T> to_vector(std::span<const std::byte> filled) {
  std::vector<T> out(filled.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), filled.data(), out.size() * sizeof(T));
  return out;
}

}  // namespace

Result<std::vector<uint32_t>> list_prog_ids() {
  std::vector<uint32_t> ids;
  uint32_t id = 0;
  for (;;) {
    uint32_t next = 0;
    int rc = bpf_prog_get_next_id(id, &next);
    if (rc == -ENOENT) break;
    if (rc < 0) return make_sys_error("bpf_prog_get_next_id after " + std::to_string(id), -rc);
    ids.push_back(next);
    id = next;
  }
  return ids;
}

Result<UniqueFd> prog_fd_by_id(uint32_t id) {
  int fd = bpf_prog_get_fd_by_id(id);
  if (fd == -ENOENT) return make_error(Errc::kNotFound, "program " + std::to_string(id) + " is gone");
  if (fd < 0) return make_sys_error("bpf_prog_get_fd_by_id " + std::to_string(id), -fd);
  return UniqueFd(fd);
}

Result<UniqueFd> pinned_object(const std::string& path) {
  int fd = bpf_obj_get(path.c_str());
  if (fd < 0) return make_sys_error("bpf_obj_get " + path, -fd);
  return UniqueFd(fd);
}

bpf_prog_info default_capacity() {
  bpf_prog_info want{};
  want.jited_prog_len = 16384;
  want.nr_jited_ksyms = 16;
  want.nr_jited_func_lens = 16;
  want.nr_func_info = 16;
  want.func_info_rec_size = sizeof(bpf_func_info);
  want.nr_line_info = 256;
  want.line_info_rec_size = sizeof(bpf_line_info);
  want.nr_jited_line_info = 256;
  want.jited_line_info_rec_size = sizeof(uint64_t);
  want.nr_prog_tags = 16;
  want.nr_map_ids = kMaxUsedMaps;
  return want;
}

Result<ProgInfo> read_prog_info(int prog_fd) {
  ReadBuffers buffers;
  return read_prog_info(prog_fd, default_capacity(), buffers);
}

Result<ProgInfo> read_prog_info(int prog_fd, const bpf_prog_info& capacity) {
  ReadBuffers buffers;
  return read_prog_info(prog_fd, capacity, buffers);
}

Result<ProgInfo> read_prog_info(int prog_fd, ReadBuffers& buffers) {
  return read_prog_info(prog_fd, default_capacity(), buffers);
}

Result<ProgInfo> read_prog_info(int prog_fd, const bpf_prog_info& capacity, ReadBuffers& buffers) {
  // The kernel fills min(capacity, actual) elements of each array and reports
  // the actual counts, so one call with generous capacities usually does; a
  // larger program takes a second call with the exact counts. (The enricher
  // runs this for every program loaded during a recording: each bpf() call
  // saved is CPU the recorder does not spend, and so is each buffer it need
  // not allocate and zero: they are the caller's, only ever grown, and never
  // read beyond what the kernel reports it wrote.)
  bpf_prog_info want = capacity;
  bpf_prog_info second{};
  std::vector<std::byte>* bufs = buffers.arrays;
  std::string who = "program on fd " + std::to_string(prog_fd);
  bool complete = false;
  for (int attempt = 0; attempt < 2 && !complete; ++attempt) {
    second = bpf_prog_info{};
    for (size_t i = 0; i < kNumArrays; ++i) {
      const ArraySpec& a = kArrays[i];
      uint32_t count = want.*a.count;
      uint32_t rec = rec_size_of(a, want);
      size_t bytes = 0;
      if (__builtin_mul_overflow(size_t{count}, size_t{rec}, &bytes) || bytes > kMaxArrayBytes) {
        return make_error(Errc::kBadRecord, who + ": " + a.name + " of " + std::to_string(count) +
                                                " x " + std::to_string(rec) + " bytes is too large");
      }
      if (bufs[i].size() < bytes) bufs[i].resize(bytes);
      second.*a.count = count;
      if (a.rec_size) second.*a.rec_size = rec;
      second.*a.ptr = count ? reinterpret_cast<uintptr_t>(bufs[i].data()) : 0;
    }
    if (Status st = get_info(prog_fd, second, attempt ? "exact" : "guess"); !st.ok()) {
      return std::move(st).error().with_context(who);
    }
    who = "program " + std::to_string(second.id);
    complete = true;
    for (size_t i = 0; i < kNumArrays; ++i) {
      const ArraySpec& a = kArrays[i];
      if (second.*a.count > want.*a.count || rec_size_of(a, second) != rec_size_of(a, want)) {
        complete = false;
      }
    }
    want = second;
  }
  if (!complete) {
    return make_error(Errc::kInternal,
                      who + ": arrays changed between two bpf_obj_get_info_by_fd calls");
  }
  if (second.jited_line_info_rec_size != 0 && second.jited_line_info_rec_size != sizeof(uint64_t)) {
    return make_error(Errc::kUnsupported, who + ": jited_line_info_rec_size " +
                                              std::to_string(second.jited_line_info_rec_size));
  }
  // Exactly what the kernel wrote, each in an allocation of its own size.
  auto filled = [&](size_t i) {
    const size_t n = size_t{second.*kArrays[i].count} * rec_size_of(kArrays[i], second);
    return std::span<const std::byte>(bufs[i].data(), n);
  };
  ProgInfo out;
  out.jited_insns = to_vector<uint8_t>(filled(0));
  out.jited_ksyms = to_vector<uint64_t>(filled(1));
  out.jited_func_lens = to_vector<uint32_t>(filled(2));
  out.func_info = to_vector<std::byte>(filled(3));
  out.line_info = to_vector<std::byte>(filled(4));
  out.jited_line_info = to_vector<uint64_t>(filled(5));
  out.prog_tags = to_vector<Tag>(filled(6));
  // Its maps, from the ids this same call returned; a map that cannot be
  // read leaves them unknown (the program's info is no less right).
  const std::vector<uint32_t> map_ids = to_vector<uint32_t>(filled(7));
  if (auto maps = maps_by_id(map_ids, second.id); maps.ok()) out.maps = std::move(maps).value();
  for (auto field : kPointerFields) second.*field = 0;
  out.info = second;
  return out;
}

Result<std::vector<MapInfo>> read_prog_maps(int prog_fd) {
  uint32_t ids[kMaxUsedMaps] = {};
  bpf_prog_info info{};
  info.nr_map_ids = kMaxUsedMaps;
  info.map_ids = reinterpret_cast<uintptr_t>(ids);
  BPFPROF_TRY(get_info(prog_fd, info, "map ids"));
  return maps_by_id(std::span(ids, std::min(info.nr_map_ids, kMaxUsedMaps)), info.id);
}

Result<std::vector<bpf_insn>> read_xlated_insns(int prog_fd) {
  // The length first, then the instructions: two calls, as a program does not
  // change once loaded.
  bpf_prog_info info{};
  BPFPROF_TRY(get_info(prog_fd, info, "xlated length"));
  const uint32_t len = info.xlated_prog_len;
  if (len > kMaxArrayBytes) {
    return make_error(Errc::kBadRecord, "program " + std::to_string(info.id) +
                                            ": xlated_prog_len " + std::to_string(len));
  }
  std::vector<bpf_insn> insns(len / sizeof(bpf_insn));
  if (insns.empty()) return insns;
  info = bpf_prog_info{};
  info.xlated_prog_len = static_cast<__u32>(insns.size() * sizeof(bpf_insn));
  info.xlated_prog_insns = reinterpret_cast<uintptr_t>(insns.data());
  BPFPROF_TRY(get_info(prog_fd, info, "xlated insns"));
  insns.resize(std::min<size_t>(insns.size(), info.xlated_prog_len / sizeof(bpf_insn)));
  return insns;
}

Result<ProgInfo> read_prog_info(int prog_fd, const std::vector<KallsymsEntry>& kallsyms,
                                const BtfBlob* btf) {
  BPFPROF_ASSIGN_OR_RETURN(ProgInfo out, read_prog_info(prog_fd));
  // Names: kallsyms where it has them; BTF only when something must be computed.
  BtfBlob own_btf;
  if (!btf && out.info.btf_id != 0 && !ksym_names_covered(out, kallsyms)) {
    BPFPROF_ASSIGN_OR_RETURN(own_btf, read_btf(out.info.btf_id));
    btf = &own_btf;
  }
  resolve_ksym_names(out, kallsyms, btf);
  return out;
}

Result<BtfBlob> read_btf(uint32_t btf_id) {
  ReadBuffers buffers;
  return read_btf(btf_id, buffers);
}

Result<BtfBlob> read_btf(uint32_t btf_id, ReadBuffers& buffers) {
  // Straight from the kernel: the recorder stores BTF and never needs
  // libbpf's parsed form. The kernel copies min(buffer, size) bytes and
  // reports the full size, so a program's BTF (a few KiB) takes one call and
  // a larger one a second. The blob is copied out at its size: a recording
  // keeps one per program loaded.
  const std::string who = "BTF " + std::to_string(btf_id);
  UniqueFd fd(bpf_btf_get_fd_by_id(btf_id));
  if (!fd.valid()) return make_sys_error("bpf_btf_get_fd_by_id " + std::to_string(btf_id), errno);
  std::vector<std::byte>& buf = buffers.btf;
  if (buf.size() < kBtfFirstRead) buf.resize(kBtfFirstRead);
  for (int attempt = 0; attempt < 2; ++attempt) {
    bpf_btf_info info{};
    info.btf = reinterpret_cast<uintptr_t>(buf.data());
    info.btf_size = static_cast<__u32>(buf.size());
    __u32 len = sizeof info;
    if (bpf_obj_get_info_by_fd(fd.get(), &info, &len) != 0) {
      return make_sys_error("bpf_obj_get_info_by_fd of " + who, errno);
    }
    if (info.btf_size <= buf.size()) {
      BtfBlob blob;
      blob.id = btf_id;
      blob.data.assign(buf.begin(), buf.begin() + info.btf_size);
      return blob;
    }
    buf.resize(info.btf_size);
  }
  return make_error(Errc::kInternal, who + " changed size between two reads");
}

Error explain_bpf_error(Error error) {
  if (error.code != Errc::kPermission) return error;
  std::string disabled = sysctl_value("/proc/sys/kernel/unprivileged_bpf_disabled");
  error.message = fmt::format("{} \u2014 needs CAP_BPF and CAP_PERFMON (or root); "
                              "kernel.unprivileged_bpf_disabled = {}",
                              error.message, disabled);
  return error;
}

}  // namespace bpfprof::bpf
