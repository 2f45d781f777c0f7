// SPDX-License-Identifier: Apache-2.0
// The records the in-kernel capture sends (bpf/capture_abi.h), assembled into
// the bpf::ProgInfo and bpf::BtfBlob the enricher would produce. A pure
// function of the bytes the ring hands over, apart from any libbpf state, so
// it is tested and fuzzed on its own (fuzz/capture_fuzzer.cc); Capture feeds
// it from the ring.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bpf/prog_info.h"
#include "capture/bpf/capture_abi.h"

namespace bpfprof::capture {

// One JIT'd function of a program as its CAPTURE_FUNC record gave it.
struct CapturedFunc {
  uint64_t addr = 0;
  uint32_t len = 0;
  bpf::Tag tag{};
};

// A link the capture saw created, or a program it saw attached without one
// (CAPTURE_LINK), its strings cut at their first NUL.
struct CapturedLink {
  uint32_t link_id = 0;  // 0: BPF_PROG_ATTACH
  uint32_t prog_id = 0;
  uint32_t link_type = 0;
  uint32_t attach_type = 0;
  uint32_t flags = 0;  // CAPTURE_LINK_*
  uint64_t time_ns = 0;
  uint64_t cgroup_id = 0;
  uint32_t ifindex = 0;
  uint32_t netns_ino = 0;
  uint32_t xdp_mode = 0;
  uint32_t target_obj_id = 0;
  uint32_t target_btf_id = 0;
  std::string name, category, ifname;
  bool has(uint32_t flag) const { return (flags & flag) != 0; }
};

// The value of a .rodata map as CAPTURE_MAP_VALUE copied it when the map was
// captured: its first `bytes.size()` bytes (at most CAPTURE_VALUE_MAX) of
// `value_size`, and the BTF type that describes it.
struct CapturedValue {
  uint32_t map_id = 0;
  uint32_t btf_id = 0;
  uint32_t btf_value_type_id = 0;
  uint32_t value_size = 0;
  std::vector<std::byte> bytes;
  bool cut() const { return bytes.size() < value_size; }
};

class CaptureAssembler {
 public:
  // One record, any bytes: what does not parse is counted in bad_records()
  // and never read past its end. A program is complete when its CAPTURE_PROG
  // arrives and every piece it announces came before it.
  void add(std::span<const std::byte> rec);
  // No record follows: programs whose CAPTURE_PROG never came are incomplete.
  void finish();

  bool captured(uint32_t id) const { return captured_.count(id) != 0; }
  const std::set<uint32_t>& incomplete() const { return incomplete_; }
  std::map<uint32_t, bpf::ProgInfo>& infos() { return infos_; }
  std::map<uint32_t, bpf::BtfBlob>& btfs() { return btfs_; }
  uint64_t bad_records() const { return bad_records_; }
  uint64_t missed() const { return missed_; }

  // Links (and attachments without one) seen since the last take_links(),
  // and the ids of links whose record did not fit in the ring.
  void take_links(std::vector<CapturedLink>& links, std::vector<uint32_t>& missed_link_ids);
  // Programs run through BPF_PROG_TEST_RUN: id -> time of the first run seen.
  const std::map<uint32_t, uint64_t>& test_runs() const { return test_runs_; }
  // The loading task's cgroup v2 id of every program whose CAPTURE_PROG or
  // CAPTURE_MISSED arrived since the last call (captured whole or not),
  // each program once: (program id, cgroup id), in arrival order.
  void take_loader_cgroups(std::vector<std::pair<uint32_t, uint64_t>>& out);
  // The whole map list of every captured program that BPF_PROG_BIND_MAP
  // added a map to since the last call (ProgInfo::maps is updated too).
  void take_bound_maps(std::map<uint32_t, std::vector<bpf::MapInfo>>& out);

  // The value captured of .rodata map `map_id` (the first one: their
  // loaders freeze them), or null.
  const CapturedValue* map_value(uint32_t map_id) const;

  // One array as its pieces arrived; `gap`: a piece came out of order.
  struct Pieces {
    std::vector<std::byte> data;
    bool gap = false;
  };

 private:
  void add_chunk(const capture_chunk& c, std::span<const std::byte> data);
  void add_prog(const capture_prog& p);
  void add_bound_map(bpf::MapInfo m, uint32_t prog);

  // Programs and BTF whose records are arriving.
  struct Partial {
    std::vector<CapturedFunc> funcs;
    std::vector<bpf::MapInfo> maps;
    std::array<Pieces, CAPTURE_NR_ARRAYS> arrays;  // CAPTURE_BTF unused
  };
  std::map<uint32_t, Partial> partial_;
  std::map<uint32_t, Pieces> partial_btf_;

  std::map<uint32_t, bpf::ProgInfo> infos_;
  std::map<uint32_t, bpf::BtfBlob> btfs_;
  std::set<uint32_t> incomplete_;
  std::set<uint32_t> captured_;
  uint64_t bad_records_ = 0;
  uint64_t missed_ = 0;
  std::vector<CapturedLink> links_;
  std::vector<uint32_t> missed_links_;
  std::map<uint32_t, uint64_t> test_runs_;
  std::set<uint32_t> loader_seen_;
  std::vector<std::pair<uint32_t, uint64_t>> loader_cgroups_;
  std::set<uint32_t> maps_bound_;  // programs whose map list grew since take_bound_maps
  std::map<uint32_t, CapturedValue> values_;  // by map id
};

}  // namespace bpfprof::capture
