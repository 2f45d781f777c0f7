// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstring>

#include "perfdata/features.h"
#include "testing/perfdata_fixtures.h"

namespace bpfprof::perfdata {
namespace {

constexpr uint64_t kBase = 0x1000;  // pretend section offset, checked in errors

void expect_same_prog(const bpf::ProgInfo& a, const bpf::ProgInfo& b) {
  EXPECT_EQ(a.info.id, b.info.id);
  EXPECT_EQ(a.info.type, b.info.type);
  EXPECT_EQ(a.name(), b.name());
  EXPECT_EQ(a.tag(), b.tag());
  EXPECT_EQ(a.info.btf_id, b.info.btf_id);
  EXPECT_EQ(a.info.run_cnt, b.info.run_cnt);
  EXPECT_EQ(a.info.xlated_prog_len, b.info.xlated_prog_len);
  EXPECT_EQ(a.jited_insns, b.jited_insns);
  EXPECT_EQ(a.jited_ksyms, b.jited_ksyms);
  EXPECT_EQ(a.jited_func_lens, b.jited_func_lens);
  EXPECT_EQ(a.func_info, b.func_info);
  EXPECT_EQ(a.line_info, b.line_info);
  EXPECT_EQ(a.jited_line_info, b.jited_line_info);
  EXPECT_EQ(a.prog_tags, b.prog_tags);
}

// Offsets of the first entry's fields inside an encoded section.
constexpr size_t kEntry = 4, kInfoLenAt = kEntry, kDataLenAt = kEntry + 4,
                 kArraysAt = kEntry + 8, kInfoAt = kEntry + 16;

template <class T>
void poke(std::vector<std::byte>& b, size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof v);
}
template <class T>
T peek(const std::vector<std::byte>& b, size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}

TEST(BpfProgInfoTest, EncodesPerfLayout) {
  auto bytes = encode_bpf_prog_info({testing::demo_prog(42, 0xffffffffc0001000)});
  EXPECT_EQ(peek<uint32_t>(bytes, 0), 1u);
  EXPECT_EQ(peek<uint32_t>(bytes, kInfoLenAt), 232u);
  // JITED_INSNS, JITED_KSYMS, FUNC_LENS, FUNC_INFO, LINE_INFO, JITED_LINE_INFO, PROG_TAGS.
  EXPECT_EQ(peek<uint64_t>(bytes, kArraysAt), 0x1F9u);
  // insns 7->8, ksyms 16, lens 8, func_info 16, line_info 48, jited lines 24, tags 16.
  EXPECT_EQ(peek<uint32_t>(bytes, kDataLenAt), 8u + 16 + 8 + 16 + 48 + 24 + 16);
  EXPECT_EQ(bytes.size(), 4u + 16 + 232 + 136);
  // Pointer fields hold offsets into data[]: jited_ksyms right after the padded image.
  EXPECT_EQ(peek<uint64_t>(bytes, kInfoAt + offsetof(bpf_prog_info, jited_prog_insns)), 0u);
  EXPECT_EQ(peek<uint64_t>(bytes, kInfoAt + offsetof(bpf_prog_info, jited_ksyms)), 8u);
  EXPECT_EQ(peek<uint64_t>(bytes, kInfoAt + offsetof(bpf_prog_info, prog_tags)), 120u);
  EXPECT_EQ(peek<uint32_t>(bytes, kInfoAt + offsetof(bpf_prog_info, nr_line_info)), 3u);
  EXPECT_EQ(peek<uint32_t>(bytes, kInfoAt + offsetof(bpf_prog_info, jited_line_info_rec_size)),
            8u);
}

TEST(BpfProgInfoTest, RoundTripsTwoPrograms) {
  std::vector<bpf::ProgInfo> progs = {testing::demo_prog(42, 0xffffffffc0001000),
                                      testing::demo_prog(43, 0xffffffffc0002000)};
  progs[1].line_info.clear();
  progs[1].jited_line_info.clear();
  auto bytes = encode_bpf_prog_info(progs);
  auto back = decode_bpf_prog_info(bytes, kBase);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  ASSERT_EQ(back->size(), 2u);
  expect_same_prog((*back)[0], progs[0]);
  expect_same_prog((*back)[1], progs[1]);
  EXPECT_EQ((*back)[0].info.nr_jited_ksyms, 2u);
  EXPECT_EQ((*back)[0].info.nr_line_info, 3u);
  EXPECT_EQ((*back)[0].info.jited_ksyms, 0u);  // pointers are not kept
}

TEST(BpfProgInfoTest, DropsDuplicateIds) {
  auto bytes = encode_bpf_prog_info({testing::demo_prog(42, 0x1000), testing::demo_prog(42, 0x2000)});
  auto back = decode_bpf_prog_info(bytes, kBase);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].jited_ksyms[0], 0x1000u);
}

TEST(BpfProgInfoTest, AcceptsLargerInfoLen) {
  auto bytes = encode_bpf_prog_info({testing::demo_prog(42, 0x1000)});
  // A newer writer: 8 more bytes of bpf_prog_info we do not know.
  bytes.insert(bytes.begin() + kInfoAt + 232, 8, std::byte{0x5a});
  poke<uint32_t>(bytes, kInfoLenAt, 240);
  auto back = decode_bpf_prog_info(bytes, kBase);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  expect_same_prog((*back)[0], testing::demo_prog(42, 0x1000));
}

TEST(BpfProgInfoTest, AcceptsSmallerInfoLenAndZeroFills) {
  // An older writer whose struct ended before run_time_ns (offset 192): build the
  // entry by hand with only the jited ksyms array.
  bpf_prog_info info{};
  info.id = 9;
  info.nr_jited_ksyms = 1;
  info.jited_ksyms = 0;  // offset 0 in data
  info.run_cnt = 777;    // lies beyond the shorter info_len: must come back 0
  std::vector<std::byte> b;
  append_pod(b, uint32_t{1});
  append_pod(b, uint32_t{192});
  append_pod(b, uint32_t{8});
  append_pod(b, uint64_t{1} << 3);
  const auto* p = reinterpret_cast<const std::byte*>(&info);
  b.insert(b.end(), p, p + 192);
  append_pod(b, uint64_t{0xffffffffc0005000});
  auto back = decode_bpf_prog_info(b, kBase);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].id(), 9u);
  EXPECT_EQ((*back)[0].info.run_cnt, 0u);
  EXPECT_EQ((*back)[0].jited_ksyms, std::vector<uint64_t>{0xffffffffc0005000});
}

TEST(BpfProgInfoTest, RejectsTruncatedSection) {
  auto bytes = encode_bpf_prog_info({testing::demo_prog(42, 0x1000)});
  for (size_t cut : {size_t{0}, size_t{3}, size_t{10}, size_t{100}, bytes.size() - 1}) {
    auto back = decode_bpf_prog_info(Bytes(bytes).first(cut), kBase);
    ASSERT_FALSE(back.ok()) << "cut at " << cut;
    EXPECT_EQ(back.error().code, Errc::kTruncated);
    ASSERT_TRUE(back.error().offset.has_value());
    EXPECT_GE(*back.error().offset, kBase);
  }
}

TEST(BpfProgInfoTest, RejectsCountOverflow) {
  auto bytes = encode_bpf_prog_info({testing::demo_prog(42, 0x1000)});
  // 0xffffffff line infos of 0xffffffff bytes: the product must not wrap.
  poke<uint32_t>(bytes, kInfoAt + offsetof(bpf_prog_info, nr_line_info), 0xffffffffu);
  poke<uint32_t>(bytes, kInfoAt + offsetof(bpf_prog_info, line_info_rec_size), 0xffffffffu);
  auto back = decode_bpf_prog_info(bytes, kBase);
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.error().code, Errc::kBadRecord);
  EXPECT_NE(back.error().message.find("exceeds data_len"), std::string::npos);
  EXPECT_EQ(*back.error().offset, kBase + kInfoAt + 232);
}

TEST(BpfProgInfoTest, RejectsArrayOffsetPastEnd) {
  auto bytes = encode_bpf_prog_info({testing::demo_prog(42, 0x1000)});
  poke<uint64_t>(bytes, kInfoAt + offsetof(bpf_prog_info, prog_tags), ~uint64_t{0} - 4);
  auto back = decode_bpf_prog_info(bytes, kBase);
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.error().code, Errc::kBadRecord);
  EXPECT_NE(back.error().to_string().find("byte offset"), std::string::npos);
}

TEST(BpfProgInfoTest, RejectsZeroRecSize) {
  auto bytes = encode_bpf_prog_info({testing::demo_prog(42, 0x1000)});
  poke<uint32_t>(bytes, kInfoAt + offsetof(bpf_prog_info, func_info_rec_size), 0);
  EXPECT_FALSE(decode_bpf_prog_info(bytes, kBase).ok());
}

TEST(BpfProgInfoTest, HugeCountWithoutDataFailsCleanly) {
  std::vector<std::byte> b;
  append_pod(b, uint32_t{0xffffffff});
  auto back = decode_bpf_prog_info(b, kBase);
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.error().code, Errc::kTruncated);
}

TEST(BpfBtfTest, RoundTripsAndValidates) {
  // A BTF header (24 bytes, no types) followed by a 1-byte string section.
  std::vector<std::byte> btf(25);
  poke<uint16_t>(btf, 0, 0xeb9f);
  poke<uint32_t>(btf, 4, 24);  // hdr_len
  poke<uint32_t>(btf, 20, 1);  // str_len
  std::vector<bpf::BtfBlob> blobs = {{7, btf}, {8, {}}};
  auto bytes = encode_bpf_btf(blobs);
  EXPECT_EQ(bytes.size(), 4u + 8 + 25 + 8);
  auto back = decode_bpf_btf(bytes, kBase);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].id, 7u);
  EXPECT_EQ((*back)[0].data, blobs[0].data);
  EXPECT_TRUE((*back)[1].data.empty());
  // A header that declares more than the blob holds: that blob is left out
  // and named, the other kept.
  auto lying = bytes;
  poke<uint32_t>(lying, 12 + 20, 2);  // str_len 2 of 1
  std::vector<Error> bad_blobs;
  auto partial = decode_bpf_btf(lying, kBase, &bad_blobs);
  ASSERT_TRUE(partial.ok());
  ASSERT_EQ(partial->size(), 1u);
  EXPECT_EQ((*partial)[0].id, 8u);
  ASSERT_EQ(bad_blobs.size(), 1u);
  EXPECT_EQ(*bad_blobs[0].offset, kBase + 12);
  EXPECT_EQ(bad_blobs[0].message, "BPF_BTF blob of id 7 has 25 bytes but its header declares 26 bytes");
  poke<uint32_t>(bytes, 8, 1000);  // data_size past the end
  auto bad = decode_bpf_btf(bytes, kBase);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(*bad.error().offset, kBase + 12);
}

}  // namespace
}  // namespace bpfprof::perfdata
