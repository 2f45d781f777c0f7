// SPDX-License-Identifier: Apache-2.0
// CaptureAssembler on records built here: what becomes a program's info and
// BTF, and what leaves a program incomplete (to be enriched by id).
#include "capture/capture_records.h"

#include <cstddef>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "testing/capture_record_builder.h"

namespace bpfprof::capture {
namespace {

using testing::capture_chunk_record;
using testing::capture_link_of;
using testing::capture_pod;
using testing::capture_program;
using testing::CaptureRecord;

void add_all(CaptureAssembler& a, const std::vector<CaptureRecord>& records) {
  for (const CaptureRecord& r : records) a.add(r);
}

TEST(CaptureAssemblerTest, AProgramWithEveryArrayAndItsBtf) {
  CaptureAssembler a;
  add_all(a, capture_program(7, 3));
  ASSERT_TRUE(a.captured(7));
  EXPECT_TRUE(a.incomplete().empty());
  EXPECT_EQ(a.bad_records(), 0u);
  const bpf::ProgInfo& p = a.infos().at(7);
  EXPECT_EQ(p.info.id, 7u);
  EXPECT_EQ(p.name(), "seed_prog");
  EXPECT_EQ(p.info.gpl_compatible, 1u);
  EXPECT_EQ(p.info.btf_id, 3u);
  ASSERT_EQ(p.jited_insns.size(), 96u);
  EXPECT_EQ(p.jited_insns[0], 0xcc);
  EXPECT_EQ(p.jited_insns[48], 0xcd);  // the second function's image follows the first's
  EXPECT_EQ(p.jited_ksyms, (std::vector<uint64_t>{0xffffffffc0001000, 0xffffffffc0001100}));
  EXPECT_EQ(p.jited_func_lens, (std::vector<uint32_t>{48, 48}));
  EXPECT_EQ(p.info.nr_jited_ksyms, 2u);
  EXPECT_EQ(p.func_info.size(), 16u);
  EXPECT_EQ(p.line_info.size(), 48u);
  EXPECT_EQ(p.jited_line_info.size(), 3u);
  ASSERT_EQ(a.btfs().count(3), 1u);
  EXPECT_EQ(a.btfs().at(3).data.size(), 40u);
  EXPECT_EQ(a.btfs().at(3).data[24], std::byte{0xeb});
}

TEST(CaptureAssemblerTest, AProgramsMapsComeWithItsInfo) {
  CaptureAssembler a;
  add_all(a, capture_program(7, 0, 0, 2));
  ASSERT_TRUE(a.captured(7));
  EXPECT_EQ(a.bad_records(), 0u);
  const bpf::ProgInfo& p = a.infos().at(7);
  EXPECT_EQ(p.info.nr_map_ids, 2u);
  ASSERT_TRUE(p.maps.has_value());
  ASSERT_EQ(p.maps->size(), 2u);
  const bpf::MapInfo& m = (*p.maps)[1];
  EXPECT_EQ(m.id, 101u);
  EXPECT_EQ(m.type, 1u);
  EXPECT_EQ(m.name, "map_1");
  EXPECT_EQ(m.key_size, 4u);
  EXPECT_EQ(m.value_size, 9u);
  EXPECT_EQ(m.max_entries, 1024u);
  EXPECT_EQ(m.flags, 1u);
  EXPECT_EQ(m.addr, 0xffff888000011000u);
  // A program without maps says so: an empty list, not an unknown one.
  add_all(a, capture_program(8, 0));
  ASSERT_TRUE(a.infos().at(8).maps.has_value());
  EXPECT_TRUE(a.infos().at(8).maps->empty());
}

TEST(CaptureAssemblerTest, AMapBoundAfterTheLoadJoinsTheProgramsList) {
  CaptureAssembler a;
  add_all(a, capture_program(7, 0, 0, 1));
  std::map<uint32_t, std::vector<bpf::MapInfo>> bound;
  a.take_bound_maps(bound);
  EXPECT_TRUE(bound.empty());
  CaptureRecord rodata = testing::capture_map_record(7, 2);
  reinterpret_cast<capture_map*>(rodata.data())->index = CAPTURE_MAP_BOUND;
  a.add(rodata);
  a.add(rodata);  // bound twice: the kernel keeps one
  CaptureRecord used = testing::capture_map_record(7, 0);
  reinterpret_cast<capture_map*>(used.data())->index = CAPTURE_MAP_BOUND;
  a.add(used);  // already used by the program
  CaptureRecord stray = testing::capture_map_record(9, 0);
  reinterpret_cast<capture_map*>(stray.data())->index = CAPTURE_MAP_BOUND;
  a.add(stray);  // a program not captured: read by id, not here
  EXPECT_EQ(a.bad_records(), 0u);
  const std::vector<bpf::MapInfo>& maps = *a.infos().at(7).maps;
  ASSERT_EQ(maps.size(), 2u);
  EXPECT_EQ(a.infos().at(7).info.nr_map_ids, 2u);
  EXPECT_EQ(maps[1].id, 102u);
  EXPECT_EQ(maps[1].name, "map_2");
  a.take_bound_maps(bound);
  ASSERT_EQ(bound.size(), 1u);
  EXPECT_EQ(bound.at(7), maps);
  bound.clear();
  a.take_bound_maps(bound);
  EXPECT_TRUE(bound.empty());
}

TEST(CaptureAssemblerTest, ARodataValueIsKeptByMapIdFirstCopyWins) {
  CaptureAssembler a;
  EXPECT_EQ(a.map_value(40), nullptr);
  std::vector<std::byte> bytes(CAPTURE_VALUE_MAX);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 7);
  a.add(testing::capture_value_record(7, 40, 3, 12, 2000, bytes));  // cut at the bound
  std::vector<std::byte> whole = {std::byte{1}, std::byte{2}, std::byte{3}};
  a.add(testing::capture_value_record(8, 41, 3, 12, 3, whole));
  a.add(testing::capture_value_record(9, 41, 3, 12, 3, {std::byte{9}, std::byte{9}, std::byte{9}}));
  EXPECT_EQ(a.bad_records(), 0u);
  const CapturedValue* v = a.map_value(40);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->map_id, 40u);
  EXPECT_EQ(v->btf_id, 3u);
  EXPECT_EQ(v->btf_value_type_id, 12u);
  EXPECT_EQ(v->value_size, 2000u);
  EXPECT_EQ(v->bytes, bytes);
  EXPECT_TRUE(v->cut());
  const CapturedValue* w = a.map_value(41);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->bytes, whole);  // the first copy: a .rodata value is frozen
  EXPECT_FALSE(w->cut());
}

TEST(CaptureAssemblerTest, ImpossibleValueSizesAreRejected) {
  CaptureAssembler a;
  const std::vector<std::byte> four(4, std::byte{0x5a});
  // len above the bound: the record cannot hold it.
  CaptureRecord over = testing::capture_value_record(7, 40, 3, 12, 4096, four);
  reinterpret_cast<capture_map_value*>(over.data())->len = CAPTURE_VALUE_MAX + 1;
  a.add(over);
  // len above the value's own size.
  a.add(testing::capture_value_record(7, 41, 3, 12, 2, four));
  // A record shorter than its len says.
  CaptureRecord shortened = testing::capture_value_record(7, 42, 3, 12, 4, four);
  shortened.resize(offsetof(capture_map_value, data) + 3);
  a.add(shortened);
  // Shorter than its fixed fields.
  CaptureRecord stub = testing::capture_value_record(7, 43, 3, 12, 4, four);
  stub.resize(offsetof(capture_map_value, data) - 1);
  a.add(stub);
  // No map, or no BTF type for its value.
  a.add(testing::capture_value_record(7, 0, 3, 12, 4, four));
  a.add(testing::capture_value_record(7, 44, 3, 0, 4, four));
  EXPECT_EQ(a.bad_records(), 6u);
  for (uint32_t id = 40; id <= 44; ++id) EXPECT_EQ(a.map_value(id), nullptr) << id;
  // Exactly len bytes after the fixed fields is enough.
  CaptureRecord exact = testing::capture_value_record(7, 45, 3, 12, 4, four);
  exact.resize(offsetof(capture_map_value, data) + 4);
  a.add(exact);
  EXPECT_EQ(a.bad_records(), 6u);
  ASSERT_NE(a.map_value(45), nullptr);
  EXPECT_EQ(a.map_value(45)->bytes, four);
}

TEST(CaptureAssemblerTest, AMissingOrMisplacedMapLeavesTheProgramIncomplete) {
  std::vector<CaptureRecord> lost = capture_program(7, 0, 0, 3);
  lost.erase(lost.end() - 3);  // map 1 never came: map 2 is out of order
  std::vector<CaptureRecord> short_count = capture_program(8, 0, 0, 2);
  short_count.erase(short_count.end() - 2);  // map 1 is the last one lost
  CaptureAssembler a;
  add_all(a, lost);
  add_all(a, short_count);
  EXPECT_FALSE(a.captured(7));
  EXPECT_FALSE(a.captured(8));
  EXPECT_EQ(a.incomplete(), (std::set<uint32_t>{7, 8}));
  EXPECT_EQ(a.bad_records(), 1u);  // map 2 of program 7
}

TEST(CaptureAssemblerTest, APieceOutOfOrderLeavesTheProgramIncomplete) {
  std::vector<CaptureRecord> records = capture_program(7, 0);
  // The second function's image claims an offset past what arrived.
  records[3] = capture_chunk_record(7, 7, CAPTURE_JITED_INSNS, 64, std::vector<std::byte>(48));
  CaptureAssembler a;
  add_all(a, records);
  EXPECT_FALSE(a.captured(7));
  EXPECT_EQ(a.incomplete().count(7), 1u);
  EXPECT_TRUE(a.infos().empty());
}

TEST(CaptureAssemblerTest, ABtfSendThatFailedPartWayDoesNotSpoilTheNextOne) {
  CaptureAssembler a;
  // Program 8's BTF (id 3) stopped after its first piece: the kernel side
  // marks the program incomplete and sends the BTF again with the next one.
  std::vector<CaptureRecord> first = capture_program(8, 0, CAPTURE_INCOMPLETE);
  first.insert(first.end() - 1, capture_chunk_record(3, 8, CAPTURE_BTF, 0, std::vector<std::byte>(24)));
  add_all(a, first);
  a.add(capture_pod(capture_header{CAPTURE_MISSED, 8}));
  add_all(a, capture_program(9, 3));
  EXPECT_EQ(a.incomplete(), (std::set<uint32_t>{8}));
  EXPECT_EQ(a.missed(), 1u);
  EXPECT_TRUE(a.captured(9));
  ASSERT_EQ(a.btfs().count(3), 1u);
  EXPECT_EQ(a.btfs().at(3).data.size(), 40u);
}

// The loader's cgroup comes with CAPTURE_PROG, whole or not, and with
// CAPTURE_MISSED: each program once, in arrival order.
TEST(CaptureAssemblerTest, TheLoadersCgroupOfEveryLoadSeen) {
  auto with_cgroup = [](std::vector<CaptureRecord> records, uint64_t cgroup) {
    std::memcpy(records.back().data() + offsetof(capture_prog, cgroup_id), &cgroup, sizeof cgroup);
    return records;
  };
  CaptureAssembler a;
  add_all(a, with_cgroup(capture_program(7, 0), 1234));
  add_all(a, with_cgroup(capture_program(8, 0, CAPTURE_INCOMPLETE), 99));
  a.add(capture_pod(capture_missed{{CAPTURE_MISSED, 8}, 99}));
  a.add(capture_pod(capture_missed{{CAPTURE_MISSED, 9}, 55}));  // its CAPTURE_PROG lost
  a.add(capture_pod(capture_header{CAPTURE_MISSED, 10}));       // no cgroup in it
  std::vector<std::pair<uint32_t, uint64_t>> got;
  a.take_loader_cgroups(got);
  EXPECT_EQ(got, (std::vector<std::pair<uint32_t, uint64_t>>{{7, 1234}, {8, 99}, {9, 55}}));
  EXPECT_TRUE(a.captured(7));
  EXPECT_EQ(a.incomplete(), (std::set<uint32_t>{8, 9, 10}));
  got.clear();
  a.take_loader_cgroups(got);
  EXPECT_TRUE(got.empty());
}

TEST(CaptureAssemblerTest, WhatDoesNotParseIsCountedAndAMissingLastRecordIsIncomplete) {
  CaptureAssembler a;
  a.add(std::vector<std::byte>(4));  // shorter than a header
  a.add(capture_pod(capture_header{99, 1}));  // no such kind
  CaptureRecord chunk = capture_chunk_record(5, 5, CAPTURE_FUNC_INFO, 0, std::vector<std::byte>(16));
  chunk.pop_back();  // its payload cut short
  a.add(chunk);
  EXPECT_EQ(a.bad_records(), 3u);
  std::vector<CaptureRecord> records = capture_program(6, 0);
  records.pop_back();  // no CAPTURE_PROG
  add_all(a, records);
  EXPECT_TRUE(a.incomplete().empty());
  a.finish();
  EXPECT_EQ(a.incomplete(), (std::set<uint32_t>{6}));
  EXPECT_TRUE(a.infos().empty());
}

TEST(CaptureAssemblerTest, ASecondCaptureOfOneIdIsNotALoad) {
  // Found by the capture fuzz target: a repeated id left a program both
  // captured and incomplete.
  CaptureAssembler a;
  add_all(a, capture_program(7, 0));
  std::vector<CaptureRecord> again = capture_program(7, 0, CAPTURE_INCOMPLETE);
  add_all(a, again);
  again.pop_back();
  add_all(a, again);  // and pieces with no CAPTURE_PROG after them
  a.finish();
  EXPECT_TRUE(a.captured(7));
  EXPECT_TRUE(a.incomplete().empty());
  EXPECT_EQ(a.bad_records(), 1u);
  EXPECT_EQ(a.infos().at(7).jited_insns.size(), 96u);
}

TEST(CaptureAssemblerTest, LinksTestRunsAndMissedLinksAreHandedOver) {
  CaptureAssembler a;
  a.add(capture_pod(capture_link_of(11, 7, 1, "task_rename")));
  capture_link attach = capture_link_of(0, 8, 0);
  attach.flags |= CAPTURE_LINK_PROG_ATTACH;
  attach.attach_type = 1;
  attach.cgroup_id = 880;
  a.add(capture_pod(attach));
  a.add(capture_pod(capture_header{CAPTURE_MISSED_LINK, 12}));
  a.add(capture_pod(capture_test_run{{CAPTURE_TEST_RUN, 9}, 500}));
  a.add(capture_pod(capture_test_run{{CAPTURE_TEST_RUN, 9}, 600}));  // LRU evicted: sent again
  EXPECT_EQ(a.bad_records(), 0u);
  std::vector<CapturedLink> links;
  std::vector<uint32_t> missed;
  a.take_links(links, missed);
  ASSERT_EQ(links.size(), 2u);
  EXPECT_EQ(links[0].link_id, 11u);
  EXPECT_EQ(links[0].prog_id, 7u);
  EXPECT_EQ(links[0].name, "task_rename");
  EXPECT_EQ(links[0].time_ns, 1'000'000'000u);
  EXPECT_TRUE(links[1].has(CAPTURE_LINK_PROG_ATTACH));
  EXPECT_EQ(links[1].cgroup_id, 880u);
  EXPECT_EQ(missed, (std::vector<uint32_t>{12}));
  EXPECT_EQ(a.test_runs(), (std::map<uint32_t, uint64_t>{{9, 500}}));
  // Taken once.
  links.clear();
  missed.clear();
  a.take_links(links, missed);
  EXPECT_TRUE(links.empty());
  EXPECT_TRUE(missed.empty());
}

TEST(CaptureAssemblerTest, LinkRecordsAreBoundedAndChecked) {
  CaptureAssembler a;
  // Every string full, no NUL anywhere: cut at the array's end, never past it.
  capture_link full = capture_link_of(11, 7, 1);
  std::memset(full.name, 'n', sizeof full.name);
  std::memset(full.category, 'c', sizeof full.category);
  std::memset(full.ifname, 'i', sizeof full.ifname);
  a.add(capture_pod(full));
  CaptureRecord cut = capture_pod(capture_link_of(13, 7, 1, "x"));
  cut.pop_back();  // one byte short
  a.add(cut);
  a.add(capture_pod(capture_link_of(14, 0, 1, "x")));  // no program
  a.add(capture_pod(capture_link_of(0, 7, 1, "x")));   // no link id, not a BPF_PROG_ATTACH
  capture_link attach = capture_link_of(15, 7, 0);     // a link id with BPF_PROG_ATTACH
  attach.flags |= CAPTURE_LINK_PROG_ATTACH;
  a.add(capture_pod(attach));
  a.add(capture_pod(capture_header{CAPTURE_MISSED_LINK, 0}));
  a.add(capture_pod(capture_header{CAPTURE_TEST_RUN, 9}));  // shorter than its record
  a.add(capture_pod(capture_test_run{{CAPTURE_TEST_RUN, 0}, 1}));
  EXPECT_EQ(a.bad_records(), 7u);
  std::vector<CapturedLink> links;
  std::vector<uint32_t> missed;
  a.take_links(links, missed);
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0].name, std::string(sizeof full.name, 'n'));
  EXPECT_EQ(links[0].category, std::string(sizeof full.category, 'c'));
  EXPECT_EQ(links[0].ifname, std::string(sizeof full.ifname, 'i'));
  EXPECT_TRUE(missed.empty());
  EXPECT_TRUE(a.test_runs().empty());
}

}  // namespace
}  // namespace bpfprof::capture
