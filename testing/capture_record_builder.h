// SPDX-License-Identifier: Apache-2.0
// Test-only builders of the in-kernel capture's records (capture/bpf/
// capture_abi.h) as the ring hands them over: one record per element, for
// capture::CaptureAssembler's tests and the capture fuzz target's corpus.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "capture/bpf/capture_abi.h"

namespace bpfprof::testing {

using CaptureRecord = std::vector<std::byte>;

template <class T>
CaptureRecord capture_pod(const T& rec, const std::vector<std::byte>& payload = {}) {
  CaptureRecord out(sizeof rec);
  std::memcpy(out.data(), &rec, sizeof rec);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

// One CAPTURE_CHUNK of `array`: `id` is the program's (the BTF's for CAPTURE_BTF).
inline CaptureRecord capture_chunk_record(uint32_t id, uint32_t prog_id, uint32_t array,
                                          uint32_t offset, const std::vector<std::byte>& data) {
  capture_chunk c{};
  c.hdr = {CAPTURE_CHUNK, id};
  c.array = array;
  c.offset = offset;
  c.len = static_cast<uint32_t>(data.size());
  c.prog_id = prog_id;
  return capture_pod(c, data);
}

// One CAPTURE_MAP of program `prog`: map i has id 100 + i, is a hash map
// "map_<i>" of 4-byte keys and (8 + i)-byte values, at 0xffff888000010000 + 0x1000 * i.
inline CaptureRecord capture_map_record(uint32_t prog, uint32_t i) {
  capture_map m{};
  m.hdr = {CAPTURE_MAP, prog};
  m.index = i;
  m.map_id = 100 + i;
  m.type = 1;
  m.key_size = 4;
  m.value_size = 8 + i;
  m.max_entries = 1024;
  m.map_flags = 1;
  m.addr = 0xffff888000010000 + 0x1000 * i;
  m.name[0] = 'm', m.name[1] = 'a', m.name[2] = 'p', m.name[3] = '_';
  m.name[4] = static_cast<char>('0' + i);
  return capture_pod(m);
}

// One CAPTURE_MAP_VALUE of program `prog`, as the kernel side sends it (the
// whole record, data[] past `bytes` zero): map `map_id`'s first bytes.
inline CaptureRecord capture_value_record(uint32_t prog, uint32_t map_id, uint32_t btf_id,
                                          uint32_t type_id, uint32_t value_size,
                                          const std::vector<std::byte>& bytes) {
  capture_map_value v{};
  v.hdr = {CAPTURE_MAP_VALUE, prog};
  v.map_id = map_id;
  v.btf_id = btf_id;
  v.btf_value_type_id = type_id;
  v.value_size = value_size;
  v.len = static_cast<uint32_t>(bytes.size());
  std::memcpy(v.data, bytes.data(), bytes.size() < sizeof v.data ? bytes.size() : sizeof v.data);
  return capture_pod(v);
}

// What the capture sends for one program of two 48-byte functions with
// func_info (2), line_info and jited_line_info (3 each), its 40-byte BTF in
// two pieces if btf_id != 0, and `nr_maps` maps (capture_map_record), in
// the kernel side's order: each function and its image, the arrays, the
// BTF, the maps, CAPTURE_PROG last.
inline std::vector<CaptureRecord> capture_program(uint32_t id, uint32_t btf_id, uint32_t flags = 0,
                                                  uint32_t nr_maps = 0) {
  std::vector<CaptureRecord> out;
  for (uint32_t i = 0; i < 2; i++) {
    capture_func f{};
    f.hdr = {CAPTURE_FUNC, id};
    f.index = i;
    f.jited_len = 48;
    f.addr = 0xffffffffc0001000 + 0x100 * i;
    for (uint32_t k = 0; k < 8; k++) f.tag[k] = static_cast<uint8_t>(id + i + k);
    out.push_back(capture_pod(f));
    out.push_back(capture_chunk_record(id, id, CAPTURE_JITED_INSNS, 48 * i,
                                       std::vector<std::byte>(48, std::byte(0xcc + i))));
  }
  capture_prog p{};
  p.hdr = {CAPTURE_PROG, id};
  p.flags = flags | CAPTURE_GPL;
  std::memcpy(p.name, "seed_prog", 10);
  p.nr_funcs = 2;
  p.jited_prog_len = p.sent[CAPTURE_JITED_INSNS] = 96;
  p.nr_func_info = 2;
  p.sent[CAPTURE_FUNC_INFO] = 2 * 8;
  p.nr_line_info = p.nr_jited_line_info = 3;
  p.sent[CAPTURE_LINE_INFO] = 3 * 16;
  p.sent[CAPTURE_JITED_LINE_INFO] = 3 * 8;
  for (uint32_t a : {CAPTURE_FUNC_INFO, CAPTURE_LINE_INFO, CAPTURE_JITED_LINE_INFO}) {
    out.push_back(capture_chunk_record(id, id, a, 0, std::vector<std::byte>(p.sent[a], std::byte{0x11})));
  }
  if (btf_id != 0) {
    p.btf_id = btf_id;
    p.flags |= CAPTURE_BTF_SENT;
    p.btf_size = p.sent[CAPTURE_BTF] = 40;
    out.push_back(capture_chunk_record(btf_id, id, CAPTURE_BTF, 0, std::vector<std::byte>(24, std::byte{0x9f})));
    out.push_back(capture_chunk_record(btf_id, id, CAPTURE_BTF, 24, std::vector<std::byte>(16, std::byte{0xeb})));
  }
  for (uint32_t i = 0; i < nr_maps; i++) out.push_back(capture_map_record(id, i));
  p.nr_map_ids = p.nr_maps = nr_maps;
  out.push_back(capture_pod(p));
  return out;
}

// One CAPTURE_LINK: link `id` (0 with CAPTURE_LINK_PROG_ATTACH) of `type`
// for program `prog`, named by `name` (raw_tp, tracepoint) when not empty.
inline capture_link capture_link_of(uint32_t id, uint32_t prog, uint32_t type, const char* name = "") {
  capture_link l{};
  l.hdr = {CAPTURE_LINK, id};
  l.prog_id = prog;
  l.link_type = type;
  l.flags = CAPTURE_LINK_NAMED;
  l.time = 1'000'000'000;
  std::strncpy(l.name, name, sizeof l.name - 1);
  return l;
}

}  // namespace bpfprof::testing
