// SPDX-License-Identifier: Apache-2.0
// Real kernel: the maps of a program captured at load are what libbpf
// reports for it by fd (bpf_prog_info.map_ids, bpf_map_info), and the
// kernel addresses captured with them are the ones its JIT image loads.
// The program loaded is the capture's own (a ring buffer, LRU hashes, a
// per-CPU array, a .rodata array the code reads by direct value access, and
// the arrays libbpf binds to it after the load by BPF_PROG_BIND_MAP).
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "bpf/metadata.h"
#include "bpf/owned_btf.h"
#include "bpf/query.h"
#include "capture/capture.h"
#include "testing/capture_kernel.h"
#include "testing/subprocess.h"

namespace bpfprof::capture {
namespace {

using namespace testing::capture_kernel;

// The 8-byte values at every offset of the JIT image (a movabs carries its
// immediate as 8 bytes in the instruction).
std::vector<uint64_t> imm64s(const std::vector<uint8_t>& image) {
  std::vector<uint64_t> out;
  for (size_t i = 0; i + 8 <= image.size(); i++) {
    uint64_t v;
    std::memcpy(&v, image.data() + i, 8);
    out.push_back(v);
  }
  return out;
}

TEST(CaptureMapsKernelTest, CapturedMapsAreLibbpfsAndTheirAddressesTheJits) {
  std::string why;
  auto capture = start_or_skip({}, why);
  if (!capture) BPFPROF_KERNEL_SKIP("capture cannot run: " + why);
  const std::span<const unsigned char> image = capture_object();
  bpf_object* obj = bpf_object__open_mem(image.data(), image.size(), nullptr);
  ASSERT_NE(obj, nullptr);
  ASSERT_EQ(bpf_object__load(obj), 0);
  ASSERT_TRUE(capture->consume().ok());

  size_t programs = 0, by_value = 0, bound = 0;
  bpf_program* p;
  bpf_object__for_each_program(p, obj) {
    const int fd = bpf_program__fd(p);
    auto info = bpf::read_prog_info(fd);
    ASSERT_TRUE(info.ok()) << info.error().to_string();
    SCOPED_TRACE("program " + info->name());
    auto want = bpf::read_prog_maps(fd);
    ASSERT_TRUE(want.ok()) << want.error().to_string();
    ASSERT_GE(want->size(), 4u);
    ASSERT_TRUE(capture->captured(info->id()));
    const bpf::ProgInfo& got = capture->infos().at(info->id());
    ASSERT_TRUE(got.maps.has_value());
    ASSERT_EQ(got.maps->size(), want->size());
    EXPECT_EQ(got.info.nr_map_ids, info->info.nr_map_ids);
    const std::vector<uint64_t> loaded = imm64s(got.jited_insns);
    size_t bound_here = 0;
    for (size_t i = 0; i < want->size(); i++) {
      bpf::MapInfo m = (*got.maps)[i];
      SCOPED_TRACE("map " + m.name);
      ASSERT_NE(m.addr, 0u);
      // What the JIT loads: the map itself, or (direct value access) an
      // address in an array map's values. Maps libbpf bound after the load
      // (BPF_PROG_BIND_MAP: .rodata) follow those the code uses.
      const bool as_map = std::find(loaded.begin(), loaded.end(), m.addr) != loaded.end();
      const bool as_value =
          m.value_addr != 0 && std::any_of(loaded.begin(), loaded.end(), [&](uint64_t v) {
            return v >= m.value_addr && v - m.value_addr < uint64_t{m.value_size} * m.max_entries;
          });
      // The kernel appends bound maps after those the code uses.
      if (as_map || as_value) {
        EXPECT_EQ(bound_here, 0u) << "a map the code uses after one bound later";
      } else {
        bound_here++;
      }
      by_value += as_value;
      if (m.type == BPF_MAP_TYPE_ARRAY) {
        EXPECT_GT(m.value_addr, m.addr);
      } else {
        EXPECT_EQ(m.value_addr, 0u);
      }
      m.addr = m.value_addr = 0;  // libbpf has no addresses
      EXPECT_EQ(m, (*want)[i]);
    }
    bound += bound_here;
    programs++;
  }
  EXPECT_EQ(programs, 1u);
  // capture_exit reads wake_at (.rodata) by direct value access.
  EXPECT_GT(by_value, 0u);
  // libbpf bound .rodata to the programs after their load: captured at the bind.
  EXPECT_GT(bound, 0u);

  // The .rodata value, copied when the map was captured: the bytes the map
  // holds, and through the BTF captured with the programs the same
  // metadata as the map read by id. Other arrays' values are not copied.
  size_t values = 0;
  bpf_map* map;
  bpf_object__for_each_map(map, obj) {
    const std::string name = bpf_map__name(map);
    SCOPED_TRACE("map " + name);
    bpf_map_info mi{};
    __u32 len = sizeof mi;
    ASSERT_EQ(bpf_obj_get_info_by_fd(bpf_map__fd(map), &mi, &len), 0);
    const CapturedValue* v = capture->map_value(mi.id);
    if (!name.ends_with(".rodata")) {
      EXPECT_EQ(v, nullptr);
      continue;
    }
    ASSERT_NE(v, nullptr);
    values++;
    EXPECT_EQ(v->btf_id, mi.btf_id);
    EXPECT_EQ(v->btf_value_type_id, mi.btf_value_type_id);
    EXPECT_EQ(v->value_size, mi.value_size);
    ASSERT_EQ(v->bytes.size(), std::min<size_t>(mi.value_size, CAPTURE_VALUE_MAX));
    std::vector<std::byte> now(mi.value_size);
    const uint32_t key = 0;
    ASSERT_EQ(bpf_map_lookup_elem(bpf_map__fd(map), &key, now.data()), 0);
    EXPECT_TRUE(std::equal(v->bytes.begin(), v->bytes.end(), now.begin()));
    ASSERT_EQ(capture->btfs().count(v->btf_id), 1u) << "the map's BTF is the programs'";
    bpf::OwnedBtf b = bpf::parse_btf(capture->btfs().at(v->btf_id));
    ASSERT_TRUE(b);
    auto decoded = bpf::metadata_from_value(b.get(), v->btf_value_type_id, v->bytes);
    auto by_id = bpf::read_rodata_metadata(mi.id);
    ASSERT_TRUE(by_id.ok()) << by_id.error().to_string();
    ASSERT_TRUE(decoded.has_value());
    EXPECT_EQ(decoded, *by_id);
  }
  EXPECT_EQ(values, 1u);
  bpf_object__close(obj);
  capture->stop();
  EXPECT_EQ(capture->bad_records(), 0u);
}

}  // namespace
}  // namespace bpfprof::capture
