// SPDX-License-Identifier: Apache-2.0
// User space: per-process maps over time (fork, exec, pid reuse, threads),
// real ELF lookups in this test binary, build-id checks, comm.
#include "symbols/process_maps.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "symbols/elf_symbols.h"
#include "testing/symbolizer_feeder.h"

extern "C" __attribute__((noinline, used)) int bpfprof_symbols_test_target(int x) {
  asm volatile("" ::: "memory");
  return x * 5 + 1;
}

namespace bpfprof::symbols {
namespace {

// This binary's executable mapping, as /proc/self/maps lists it.
struct SelfMap {
  uint64_t start = 0, end = 0, pgoff = 0;
  std::string path;
};

SelfMap self_text_map() {
  const auto target = reinterpret_cast<uint64_t>(&bpfprof_symbols_test_target);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    SelfMap m;
    char perms[8] = {};
    char path[4096] = {};
    if (std::sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %4095s", &m.start,
                    &m.end, perms, &m.pgoff, path) < 4) {
      continue;
    }
    if (target >= m.start && target < m.end) {
      m.path = path;
      return m;
    }
  }
  return {};
}

class ProcessMapsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    self_ = self_text_map();
    ASSERT_NE(self_.start, 0u);
    ASSERT_FALSE(self_.path.empty());
    target_ = reinterpret_cast<uint64_t>(&bpfprof_symbols_test_target);
  }
  SelfMap self_;
  uint64_t target_ = 0;
  perfdata::Features features_;
};

TEST_F(ProcessMapsTest, ResolvesOwnFunctionAcrossForkExecAndReuse) {
  Symbolizer sym(features_, {});
  testing::Feeder f(sym);
  const uint64_t len = self_.end - self_.start;
  f.comm(0, 1000, 1000, "parent");
  f.mmap2(0, 1000, self_.start, len, self_.pgoff, self_.path);
  f.fork(10, 1000, 1000, 1001, 1000);    // a thread: shares the maps
  f.fork(50, 2000, 1000, 2000, 1000);    // a child process: copies them
  f.comm(100, 2000, 2000, "child", /*exec=*/true);  // exec: no new map over the old
  f.fork(0, 3000, 1000, 3000, 1000, perf::kMiscForkExec);  // synthesized: no copy
  f.mmap2(200, 1000, self_.start, len, self_.pgoff, "[vdso]");  // remapped over, later
  sym.finish();

  struct Case {
    uint32_t pid;
    uint64_t time;
    FrameKind kind;
    Unknown unknown;
  };
  const Case cases[] = {
      {1000, 5, FrameKind::kUser, Unknown::kNone},
      {2000, 40, FrameKind::kUnknown, Unknown::kNoMap},   // before the fork
      {2000, 60, FrameKind::kUser, Unknown::kNone},       // copied at fork
      // exec at 100: what the new image does not map over keeps its old
      // map (a sample in execve has the old image's user frames).
      {2000, 100, FrameKind::kUser, Unknown::kNone},
      {3000, 60, FrameKind::kUnknown, Unknown::kNoMap},
      {4000, 60, FrameKind::kUnknown, Unknown::kNoProcess},
      {1000, 199, FrameKind::kUser, Unknown::kNone},
      // The newer map wins from its time: a vDSO, and the recording holds no image.
      {1000, 200, FrameKind::kUnknown, Unknown::kNoVdso},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "pid " << c.pid << " t " << c.time);
    Frame fr = sym.lookup(c.pid, target_ + 4, c.time, false);
    EXPECT_EQ(fr.kind, c.kind);
    EXPECT_EQ(fr.unknown, c.unknown);
    if (c.kind == FrameKind::kUser) {
      EXPECT_EQ(fr.symbol, "bpfprof_symbols_test_target");
      EXPECT_EQ(fr.symbol_start, target_);
      EXPECT_EQ(fr.dso, self_.path);
    }
  }
  EXPECT_EQ(sym.lookup(1000, self_.end + 0x100000000ull, 5, false).unknown, Unknown::kNoMap);
}

TEST_F(ProcessMapsTest, BuildIdMismatchAndSymfs) {
  auto elf = ElfSymbols::load(self_.path);
  ASSERT_TRUE(elf.ok()) << elf.error().to_string();
  const std::vector<uint8_t> real = (*elf)->build_id();
  if (real.empty()) GTEST_SKIP() << "test binary was linked without a build id";
  auto mmap2_with_build_id = [&](uint32_t pid, const std::vector<uint8_t>& id) {
    testing::RecordWriter w(perf::kRecordMmap2, perf::kMiscUser | perf::kMiscMmapBuildId);
    w.u32(pid).u32(pid).u64(self_.start).u64(self_.end - self_.start).u64(self_.pgoff);
    w.u8(static_cast<uint8_t>(id.size())).u8(0).u16(0);
    for (size_t i = 0; i < 20; ++i) w.u8(i < id.size() ? id[i] : 0);
    w.u32(5).u32(0).padded_string(self_.path);
    return w.bytes(testing::sample_id_trailer(testing::Feeder::kSampleType, testing::Feeder::at(0))).finish();
  };
  std::vector<uint8_t> wrong = real;
  wrong[0] ^= 0xff;
  Symbolizer sym(features_, {});
  testing::Feeder f(sym);
  f.feed(mmap2_with_build_id(1, real));
  f.feed(mmap2_with_build_id(2, wrong));
  sym.finish();
  Frame ok = sym.lookup(1, target_, 5, false);
  EXPECT_EQ(ok.symbol, "bpfprof_symbols_test_target");
  Frame bad = sym.lookup(2, target_, 5, false);
  EXPECT_EQ(bad.kind, FrameKind::kUnknown);
  EXPECT_EQ(bad.unknown, Unknown::kNoElf);
  EXPECT_EQ(bad.dso, self_.path);

  Symbolizer::Options o;
  o.symfs = "/nonexistent-symfs";
  Symbolizer moved(features_, o);
  testing::Feeder g(moved);
  g.mmap2(0, 1, self_.start, self_.end - self_.start, self_.pgoff, self_.path);
  moved.finish();
  EXPECT_EQ(moved.lookup(1, target_, 5, false).unknown, Unknown::kNoElf);
}

// Pass 2 is parallel: the first lookups race on the lazy ELF load.
TEST_F(ProcessMapsTest, ParallelLookupsShareOneLazyLoad) {
  Symbolizer sym(features_, {});
  testing::Feeder f(sym);
  for (uint32_t pid = 1; pid <= 8; ++pid) {
    f.mmap2(0, pid, self_.start, self_.end - self_.start, self_.pgoff, self_.path);
  }
  sym.finish();
  std::vector<std::thread> threads;
  std::vector<int> resolved(8, 0);
  for (uint32_t i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      for (int n = 0; n < 1000; ++n) {
        Frame fr = sym.lookup(i + 1, target_ + (n % 4), n, false);  // the function is 5 bytes
        resolved[i] += fr.symbol == "bpfprof_symbols_test_target";
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r : resolved) EXPECT_EQ(r, 1000);
}

TEST_F(ProcessMapsTest, CppNamesDemangled) {
  Symbolizer sym(features_, {});
  testing::Feeder f(sym);
  f.mmap2(0, 1, self_.start, self_.end - self_.start, self_.pgoff, self_.path);
  sym.finish();
  const auto fn = reinterpret_cast<uint64_t>(&is_fileless_mapping);
  if (fn < self_.start || fn >= self_.end) GTEST_SKIP() << "function outside the mapped text";
  Frame fr = sym.lookup(1, fn, 0, false);
  EXPECT_EQ(fr.symbol, "bpfprof::symbols::is_fileless_mapping");  // perf's short form
  Symbolizer::Options full;
  full.full_signatures = true;
  Symbolizer with_signatures(features_, std::move(full));
  testing::Feeder g(with_signatures);
  g.mmap2(0, 1, self_.start, self_.end - self_.start, self_.pgoff, self_.path);
  with_signatures.finish();
  EXPECT_EQ(with_signatures.lookup(1, fn, 0, false).symbol,
            "bpfprof::symbols::is_fileless_mapping(std::basic_string_view<char, std::char_traits<char> >)");
}

// Names are demangled on first lookup, by whichever thread comes first: every
// thread gets the same view (callers compare names by identity).
TEST_F(ProcessMapsTest, LazyDemanglingGivesOneViewToEveryThread) {
  const auto fn = reinterpret_cast<uint64_t>(&is_fileless_mapping);
  if (fn < self_.start || fn >= self_.end) GTEST_SKIP() << "function outside the mapped text";
  for (int round = 0; round < 20; round++) {
    Symbolizer sym(features_, {});
    testing::Feeder f(sym);
    f.mmap2(0, 1, self_.start, self_.end - self_.start, self_.pgoff, self_.path);
    sym.finish();
    std::vector<std::string_view> seen(4);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < seen.size(); i++) {
      threads.emplace_back([&, i] { seen[i] = sym.lookup(1, fn, 0, false).symbol; });
    }
    for (auto& t : threads) t.join();
    for (std::string_view v : seen) {
      EXPECT_EQ(v, "bpfprof::symbols::is_fileless_mapping");
      EXPECT_EQ(v.data(), seen[0].data());
    }
    EXPECT_EQ(sym.lookup(1, fn, 0, false).symbol.data(), seen[0].data());
  }
}

TEST_F(ProcessMapsTest, FilelessMappings) {
  EXPECT_TRUE(is_fileless_mapping("[vdso]"));
  EXPECT_TRUE(is_fileless_mapping("[heap]"));
  EXPECT_TRUE(is_fileless_mapping("//anon"));
  EXPECT_TRUE(is_fileless_mapping("/memfd:jit (deleted)"));
  EXPECT_FALSE(is_fileless_mapping("/usr/lib/libc.so.6"));
}

TEST(CommTest, LatestAtOrBeforeTime) {
  perfdata::Features features;
  Symbolizer sym(features, {});
  testing::Feeder f(sym);
  f.comm(0, 10, 10, "bash");
  f.comm(100, 10, 10, "ls", /*exec=*/true);
  f.fork(150, 10, 10, 11, 10);  // a thread inherits the name
  f.comm(300, 10, 11, "worker");
  sym.finish();
  EXPECT_EQ(sym.comm(10, 10, 0), "bash");
  EXPECT_EQ(sym.comm(10, 10, 99), "bash");
  EXPECT_EQ(sym.comm(10, 10, 100), "ls");
  // Back and forth across the exec (lookups remember an answer with its times).
  EXPECT_EQ(sym.comm(10, 10, 99), "bash");
  EXPECT_EQ(sym.comm(10, 10, 5000), "ls");
  EXPECT_EQ(sym.comm(10, 10, 0), "bash");
  EXPECT_EQ(sym.comm(10, 11, 160), "ls");
  EXPECT_EQ(sym.comm(10, 11, 300), "worker");
  EXPECT_EQ(sym.comm(10, 12, 300), "ls") << "unknown thread: the process's name";
  EXPECT_EQ(sym.comm(99, 99, 300), "");
}

// Two recordings' names asked in turn for the same (pid, tid): each answers
// from its own records (a lookup remembers the last thread per thread).
TEST(CommTest, TwoRecordingsAnswerForThemselves) {
  perfdata::Features features;
  Symbolizer a(features, {}), b(features, {});
  testing::Feeder fa(a), fb(b);
  fa.comm(0, 10, 10, "first");
  fb.comm(0, 10, 10, "second");
  fb.comm(50, 10, 10, "renamed");
  a.finish();
  b.finish();
  for (int i = 0; i < 3; i++) {
    EXPECT_EQ(a.comm(10, 10, 60), "first");
    EXPECT_EQ(b.comm(10, 10, 60), "renamed");
    EXPECT_EQ(b.comm(10, 10, 10), "second");
    EXPECT_EQ(a.comm(10, 11, 60), "first") << "unknown thread: the process's name";
    EXPECT_EQ(a.comm(11, 11, 60), "");
  }
}

}  // namespace
}  // namespace bpfprof::symbols
