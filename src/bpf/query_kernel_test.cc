// SPDX-License-Identifier: Apache-2.0
// Real-kernel tests of program enumeration, bpf_prog_info and BTF fetches.
#include "bpf/query.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <numeric>

#include "testing/bpf_programs.h"

namespace bpfprof::bpf {
namespace {

// The arrays bpf_prog_info points to, read twice, must be the same.
void expect_same_arrays(const ProgInfo& got, const ProgInfo& want) {
  EXPECT_EQ(got.jited_insns, want.jited_insns);
  EXPECT_EQ(got.jited_ksyms, want.jited_ksyms);
  EXPECT_EQ(got.jited_func_lens, want.jited_func_lens);
  EXPECT_EQ(got.func_info, want.func_info);
  EXPECT_EQ(got.line_info, want.line_info);
  EXPECT_EQ(got.jited_line_info, want.jited_line_info);
  EXPECT_EQ(got.prog_tags, want.prog_tags);
}

class QueryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto obj = testing::load_query_progs();
    if (!obj.ok() && obj.error().sys_errno == EPERM) {
      GTEST_SKIP() << "kernel refused to load BPF programs: " << obj.error().to_string();
    }
    ASSERT_TRUE(obj.ok()) << obj.error().to_string();
    obj_ = std::move(obj).value();
    main_fd_ = testing::prog_fd_in(obj_.get(), "query_main_calls_sub");
    single_fd_ = testing::prog_fd_in(obj_.get(), "query_single_function");
    ASSERT_GE(main_fd_, 0);
    ASSERT_GE(single_fd_, 0);
  }

  ProgInfo info_of(int fd) {
    auto info = read_prog_info(fd);
    EXPECT_TRUE(info.ok()) << info.error().to_string();
    return info.ok() ? std::move(info).value() : ProgInfo{};
  }

  testing::BpfObjectPtr obj_;
  int main_fd_ = -1;
  int single_fd_ = -1;
};

// Checks the arrays of a program with `nfuncs` functions against each other.
void expect_consistent(const ProgInfo& p, size_t nfuncs) {
  const bpf_prog_info& i = p.info;
  EXPECT_EQ(i.nr_jited_ksyms, nfuncs);
  ASSERT_EQ(p.jited_ksyms.size(), nfuncs);
  ASSERT_EQ(p.jited_func_lens.size(), nfuncs);
  ASSERT_EQ(p.prog_tags.size(), nfuncs);
  EXPECT_EQ(i.nr_prog_tags, nfuncs);
  for (size_t f = 0; f < nfuncs; ++f) {
    EXPECT_NE(p.jited_ksyms[f], 0u) << "function " << f;
    EXPECT_GT(p.jited_func_lens[f], 0u) << "function " << f;
  }
  uint64_t total = std::accumulate(p.jited_func_lens.begin(), p.jited_func_lens.end(), uint64_t{0});
  EXPECT_EQ(p.jited_insns.size(), total);
  EXPECT_EQ(i.jited_prog_len, total);
  EXPECT_EQ(i.nr_func_info, nfuncs);
  EXPECT_EQ(p.func_info.size(), size_t{i.nr_func_info} * i.func_info_rec_size);
  EXPECT_GT(i.nr_line_info, 0u);
  EXPECT_EQ(p.line_info.size(), size_t{i.nr_line_info} * i.line_info_rec_size);
  EXPECT_EQ(p.jited_line_info.size(), i.nr_jited_line_info);
  EXPECT_EQ(i.nr_jited_line_info, i.nr_line_info);
  EXPECT_NE(i.btf_id, 0u);
  // The copy must not point into our freed buffers.
  EXPECT_EQ(i.jited_prog_insns, 0u);
  EXPECT_EQ(i.jited_ksyms, 0u);
  EXPECT_EQ(i.jited_func_lens, 0u);
  EXPECT_EQ(i.func_info, 0u);
  EXPECT_EQ(i.line_info, 0u);
  EXPECT_EQ(i.jited_line_info, 0u);
  EXPECT_EQ(i.prog_tags, 0u);
  EXPECT_EQ(i.xlated_prog_insns, 0u);
  EXPECT_EQ(i.map_ids, 0u);
  EXPECT_TRUE(p.ksym_names.empty()) << "the plain fetch leaves names to resolve_ksym_names";
}

TEST_F(QueryTest, ListProgIdsContainsLoadedPrograms) {
  ProgInfo m = info_of(main_fd_);
  ProgInfo s = info_of(single_fd_);
  auto ids = list_prog_ids();
  ASSERT_TRUE(ids.ok()) << ids.error().to_string();
  EXPECT_TRUE(std::is_sorted(ids->begin(), ids->end()));
  EXPECT_NE(std::find(ids->begin(), ids->end(), m.id()), ids->end());
  EXPECT_NE(std::find(ids->begin(), ids->end(), s.id()), ids->end());
}

TEST_F(QueryTest, Bpf2BpfProgramHasTwoFunctions) {
  ProgInfo m = info_of(main_fd_);
  EXPECT_EQ(m.name(), "query_main_call");  // info.name keeps 15 chars
  expect_consistent(m, 2);
  // The JIT lays functions out in separate images; each line maps into one.
  for (uint64_t addr : m.jited_line_info) {
    bool inside = false;
    for (size_t f = 0; f < 2; ++f) {
      inside |= addr >= m.jited_ksyms[f] && addr < m.jited_ksyms[f] + m.jited_func_lens[f];
    }
    EXPECT_TRUE(inside) << std::hex << addr;
  }
}

TEST_F(QueryTest, SingleFunctionProgram) {
  ProgInfo s = info_of(single_fd_);
  EXPECT_EQ(s.name(), "query_single_fu");
  expect_consistent(s, 1);
  EXPECT_EQ(s.prog_tags[0], s.tag());
}

TEST_F(QueryTest, ProgFdByIdOpensSameProgram) {
  ProgInfo m = info_of(main_fd_);
  auto fd = prog_fd_by_id(m.id());
  ASSERT_TRUE(fd.ok()) << fd.error().to_string();
  ProgInfo again = info_of(fd->get());
  EXPECT_EQ(again.id(), m.id());
  EXPECT_EQ(again.jited_insns, m.jited_insns);
  EXPECT_EQ(again.ksym_names, m.ksym_names);
}

TEST_F(QueryTest, TooSmallCapacitiesTakeASecondCall) {
  ProgInfo m = info_of(main_fd_);
  bpf_prog_info tiny = default_capacity();
  tiny.jited_prog_len = 1;
  tiny.nr_jited_ksyms = 1;
  tiny.nr_jited_func_lens = 1;
  tiny.nr_func_info = 1;
  tiny.nr_line_info = 1;
  tiny.nr_jited_line_info = 1;
  tiny.nr_prog_tags = 1;
  auto again = read_prog_info(main_fd_, tiny);
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  expect_same_arrays(*again, m);
  EXPECT_GT(m.jited_insns.size(), 1u) << "the tiny capacity really was too small";
}

TEST_F(QueryTest, ReadBtf) {
  ProgInfo m = info_of(main_fd_);
  auto btf = read_btf(m.info.btf_id);
  ASSERT_TRUE(btf.ok()) << btf.error().to_string();
  EXPECT_EQ(btf->id, m.info.btf_id);
  EXPECT_GT(btf->data.size(), 24u);  // at least a btf_header
  EXPECT_EQ(static_cast<uint8_t>(btf->data[0]), 0x9f);  // BTF_MAGIC 0xeb9f, little endian
  EXPECT_EQ(static_cast<uint8_t>(btf->data[1]), 0xeb);
}

TEST_F(QueryTest, ReadLargeBtfTakesASecondCall) {
  // The kernel's own BTF (vmlinux, megabytes) is larger than the first read's buffer.
  uint32_t id = 0, largest_id = 0;
  size_t largest = 0;
  while (bpf_btf_get_next_id(id, &id) == 0) {
    auto btf = read_btf(id);
    if (btf.ok() && btf->data.size() > largest) {
      largest = btf->data.size();
      largest_id = id;
    }
  }
  ASSERT_GT(largest, 64u * 1024) << "no BTF object larger than 64 KiB (vmlinux BTF missing?)";
  auto btf = read_btf(largest_id);
  ASSERT_TRUE(btf.ok()) << btf.error().to_string();
  EXPECT_EQ(btf->data.size(), largest);
  EXPECT_EQ(static_cast<uint8_t>(btf->data[0]), 0x9f);
  // The header's type and string section lengths account for the whole blob.
  uint32_t hdr_len, type_off, type_len, str_off, str_len;
  std::memcpy(&hdr_len, btf->data.data() + 4, 4);
  std::memcpy(&type_off, btf->data.data() + 8, 4);
  std::memcpy(&type_len, btf->data.data() + 12, 4);
  std::memcpy(&str_off, btf->data.data() + 16, 4);
  std::memcpy(&str_len, btf->data.data() + 20, 4);
  EXPECT_EQ(size_t{hdr_len} + std::max(type_off + type_len, str_off + str_len), btf->data.size());
}

// The enricher reads every program into the same buffers: results must not
// depend on what was read before (a larger program's bytes left behind, a
// smaller one's buffers grown), and what is kept is only what the kernel wrote
// (a recording keeps one copy per program loaded: no 64 KiB read buffer each).
TEST_F(QueryTest, ReusedBuffersGiveExactResults) {
  ProgInfo m = info_of(main_fd_);
  ProgInfo s = info_of(single_fd_);
  ReadBuffers buffers;
  for (int fd : {main_fd_, single_fd_, main_fd_}) {
    auto again = read_prog_info(fd, buffers);
    ASSERT_TRUE(again.ok()) << again.error().to_string();
    const ProgInfo& want = fd == main_fd_ ? m : s;
    expect_same_arrays(*again, want);
    EXPECT_EQ(std::memcmp(&again->info, &want.info, sizeof want.info), 0);
  }
  // A large BTF (vmlinux) through the same buffers, then the program's again.
  auto small = read_btf(m.info.btf_id);
  ASSERT_TRUE(small.ok()) << small.error().to_string();
  auto vmlinux = read_btf(1, buffers);
  ASSERT_TRUE(vmlinux.ok()) << vmlinux.error().to_string();
  auto again = read_btf(m.info.btf_id, buffers);
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  EXPECT_EQ(again->data, small->data);
  EXPECT_LT(again->data.capacity(), 2 * again->data.size() + 64) << "kept at its size";
  EXPECT_LT(small->data.capacity(), 2 * small->data.size() + 64) << "kept at its size";
}

TEST_F(QueryTest, ReadBtfOfMissingIdFails) {
  auto btf = read_btf(0xfffffff0u);
  ASSERT_FALSE(btf.ok());
  EXPECT_NE(btf.error().message.find("bpf_btf_get_fd_by_id 4294967280"), std::string::npos)
      << btf.error().message;
}

TEST_F(QueryTest, ClosedProgramIsGone) {
  uint32_t main_id = info_of(main_fd_).id();
  uint32_t single_id = info_of(single_fd_).id();
  obj_.reset();
  // The kernel frees programs after an RCU grace period; wait for it briefly.
  for (uint32_t id : {main_id, single_id}) {
    bool gone = false;
    for (int tries = 0; !gone && tries < 200; ++tries) {
      Result<UniqueFd> fd = prog_fd_by_id(id);
      if (fd.ok()) {
        usleep(10'000);
        continue;
      }
      gone = true;
      EXPECT_EQ(fd.error().code, Errc::kNotFound);
      EXPECT_EQ(fd.error().message, "program " + std::to_string(id) + " is gone");
    }
    EXPECT_TRUE(gone) << "program " << id << " still present";
  }
}

TEST(QueryErrors, ReadProgInfoOnBadFd) {
  auto info = read_prog_info(-1);
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.error().sys_errno, 0);
  EXPECT_NE(info.error().message.find("bpf_obj_get_info_by_fd"), std::string::npos);
}

}  // namespace
}  // namespace bpfprof::bpf
