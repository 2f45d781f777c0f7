// SPDX-License-Identifier: Apache-2.0
// Kernel text from the stored kallsyms snapshot: parsing, symbol ends, modules.
#include "symbols/kernel_symbols.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "perfdata/features.h"
#include "testing/symbolizer_feeder.h"

namespace bpfprof::symbols {
namespace {

constexpr char kSnapshot[] =
    "ffffffff81000000 T _text\n"
    "ffffffff81000100 T start_kernel\n"
    "ffffffff81000200 t helper\n"
    "ffffffff81000200 T helper_alias\n"
    "ffffffff81000280 D some_data\n"
    "ffffffff81000300 T _etext\n"
    "ffffffffc0001000 t mod_fn\t[mymod]\n"
    "ffffffffc0001100 t mod_last\t[mymod]\n"
    "ffffffffc0002000 t bpf_prog_0123456789abcdef_foo\t[bpf]\n"
    "ffffffffc0003000 t other_fn\t[othermod]\n"
    "malformed line\n";

struct Case {
  uint64_t ip;
  FrameKind kind;
  std::string symbol, dso;
  Unknown unknown = Unknown::kNone;
};

// The snapshot as text (a live session) or as the reader leaves the
// section: packed, as a table (version 2), in blocks (version 5, what record
// writes) or as older files hold it (version 1, zstd text).
enum class Form { kText, kTable, kBlocked, kOldText };
class KernelSnapshotForms : public ::testing::TestWithParam<Form> {};

TEST_P(KernelSnapshotForms, ResolvesFromSnapshotWithModuleMaps) {
  const std::vector<std::byte> packed =
      GetParam() == Form::kOldText   ? perfdata::encode_kallsyms_v1(kSnapshot)
      : GetParam() == Form::kBlocked ? perfdata::encode_kallsyms_blocked(kSnapshot)
                                     : perfdata::encode_kallsyms(kSnapshot);
  perfdata::Features features;
  if (GetParam() == Form::kText) {
    features.kallsyms = kSnapshot;
  } else {
    features.kallsyms_packed = packed;
  }
  Symbolizer sym(features, {});
  testing::Feeder f(sym);
  // The recorder's kernel MMAPs (pid -1, cpumode kernel) give the ranges.
  f.feed(testing::mmap_record(testing::Feeder::kSampleType, UINT32_MAX, 0, 0xffffffff81000000, 0x300,
                              0xffffffff81000000, "[kernel.kallsyms]_text", {}, perf::kMiscKernel));
  f.feed(testing::mmap_record(testing::Feeder::kSampleType, UINT32_MAX, 0, 0xffffffffc0001000, 0x200, 0,
                              "[mymod]", {}, perf::kMiscKernel));
  sym.finish();
  const std::vector<Case> cases = {
      {0xffffffff81000000, FrameKind::kKernel, "_text", "[kernel.kallsyms]"},
      {0xffffffff81000150, FrameKind::kKernel, "start_kernel", "[kernel.kallsyms]"},
      {0xffffffff810002f0, FrameKind::kKernel, "helper_alias", "[kernel.kallsyms]"},  // global alias; data skipped
      {0xffffffff81000300, FrameKind::kUnknown, "", "", Unknown::kKernelNoSymbol},   // at _etext
      {0xffffffffc0001010, FrameKind::kModule, "mod_fn", "[mymod]"},
      {0xffffffffc00011f0, FrameKind::kModule, "mod_last", "[mymod]"},
      {0xffffffffc0001200, FrameKind::kUnknown, "", "", Unknown::kKernelNoSymbol},  // module end
      {0xffffffffc0002010, FrameKind::kUnknown, "", "", Unknown::kKernelNoSymbol},  // [bpf]: not from kallsyms
      {0xffffffffc0003010, FrameKind::kModule, "other_fn", "[othermod]"},            // no map: capped
      {0xffffffffc0004010, FrameKind::kUnknown, "", "", Unknown::kKernelNoSymbol},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << std::hex << "ip 0x" << c.ip);
    Frame fr = sym.lookup(1, c.ip, 5, /*kernel=*/true);
    EXPECT_EQ(fr.kind, c.kind);
    EXPECT_EQ(fr.unknown, c.unknown);
    if (!c.symbol.empty()) {
      EXPECT_EQ(fr.symbol, c.symbol);
    }
    if (!c.dso.empty()) {
      EXPECT_EQ(fr.dso, c.dso);
    }
  }
  EXPECT_EQ(sym.lookup(1, 0xffffffff81000150, 5, true).symbol_start, 0xffffffff81000100u);
  EXPECT_FALSE(sym.kallsyms_error().has_value());
}

INSTANTIATE_TEST_SUITE_P(TextOrPacked, KernelSnapshotForms,
                         ::testing::Values(Form::kText, Form::kTable, Form::kBlocked,
                                           Form::kOldText),
                         [](const auto& info) {
                           return info.param == Form::kText      ? "text"
                                  : info.param == Form::kTable   ? "table"
                                  : info.param == Form::kBlocked ? "blocked"
                                                                 : "old_text";
                         });

// A version 5 block that does not decompress: its kernel frames are
// unnamed, the others named, and the symbolizer says which block and where
// once a lookup has met it (the report's header and
// feature_sections_unreadable carry it).
TEST(KernelSymbolsTest, ADamagedBlockLeavesItsFramesUnnamedAndSaysWhere) {
  std::string text;
  for (int i = 0; i < 3000; ++i) {
    char line[64];
    std::snprintf(line, sizeof line, "%016llx T fn_%d\n",
                  0xffffffff81000000ull + 64ull * static_cast<unsigned>(i), i);
    text += line;
  }
  std::vector<std::byte> packed = perfdata::encode_kallsyms_blocked(text);
  // Block 1's frame (of 3), scrambled past its header: blocks = u32 at 32,
  // the index (first addresses, frame ends) from 40, no modules.
  const uint32_t blocks = load_unaligned<uint32_t>(packed.data() + 32);
  ASSERT_EQ(blocks, 3u);
  const size_t ends = 40 + 8 * blocks, frames = ends + 8 * blocks;
  const size_t b1 = frames + load_unaligned<uint64_t>(packed.data() + ends);
  const size_t b2 = frames + load_unaligned<uint64_t>(packed.data() + ends + 8);
  for (size_t at = b1 + 12; at < b2 - 4; at++) packed[at] = std::byte{0xff};
  perfdata::Features features;
  features.kallsyms_packed = packed;
  features.kallsyms_packed_at = 4096;
  Symbolizer sym(features, {});
  sym.finish();
  EXPECT_FALSE(sym.kallsyms_error().has_value());
  EXPECT_EQ(sym.lookup(1, 0xffffffff81000000ull + 64 * 5 + 3, 5, true).symbol, "fn_5");
  EXPECT_FALSE(sym.kallsyms_damage().has_value());
  const Frame in_damaged = sym.lookup(1, 0xffffffff81000000ull + 64 * 1500 + 3, 5, true);
  EXPECT_EQ(in_damaged.unknown, Unknown::kKernelNoSymbol);
  ASSERT_TRUE(sym.kallsyms_damage().has_value());
  EXPECT_EQ(sym.kallsyms_damage()->offset, 4096 + b1) << sym.kallsyms_damage()->to_string();
  EXPECT_EQ(sym.lookup(1, 0xffffffff81000000ull + 64 * 2500 + 3, 5, true).symbol, "fn_2500");
}

// Cut short: the zstd frame of version 1, the pool of version 2.
class BrokenSnapshot : public ::testing::TestWithParam<bool> {};

TEST_P(BrokenSnapshot, APackedSnapshotThatDoesNotOpenIsAnErrorAndNoSymbols) {
  std::vector<std::byte> packed =
      GetParam() ? perfdata::encode_kallsyms(kSnapshot) : perfdata::encode_kallsyms_v1(kSnapshot);
  packed.resize(packed.size() - 3);
  perfdata::Features features;
  features.kallsyms_packed = packed;
  features.kallsyms_packed_at = 4096;
  Symbolizer sym(features, {});
  sym.finish();
  ASSERT_TRUE(sym.kallsyms_error().has_value());
  // Named at its place in the file.
  EXPECT_GE(sym.kallsyms_error()->offset.value_or(0), 4096u) << sym.kallsyms_error()->to_string();
  EXPECT_LT(sym.kallsyms_error()->offset.value_or(0), 4096u + packed.size());
  EXPECT_EQ(sym.lookup(1, 0xffffffff81000150, 5, true).unknown, Unknown::kNoKallsyms);
}

INSTANTIATE_TEST_SUITE_P(OldOrTable, BrokenSnapshot, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "table" : "old_text"; });

// Every way a version 2 table can lie is refused at open, with the offset of
// the field that lies; nothing is read out of bounds (ASan builds check).
TEST(KallsymsTableTest, RefusesTablesThatLie) {
  const std::vector<std::byte> good = perfdata::encode_kallsyms(kSnapshot);
  ASSERT_TRUE(perfdata::KallsymsTable::open(good, 0).ok());
  auto patched = [&](size_t at, auto value) {
    std::vector<std::byte> b = good;
    std::memcpy(b.data() + at, &value, sizeof value);
    return b;
  };
  auto t = perfdata::KallsymsTable::open(good, 0);
  const size_t n = t->size();
  ASSERT_EQ(n, 6u);  // _text start_kernel helper_alias mod_fn mod_last other_fn
  const size_t addrs = 32, ends = addrs + 8 * n, mods = ends + 4 * (n + 2);
  struct Lie {
    std::vector<std::byte> blob;
    Errc code;
    size_t at;
  };
  const std::vector<Lie> lies = {
      {patched(0, uint32_t{6}), Errc::kUnsupported, 0},
      {patched(4, uint32_t{1}), Errc::kUnsupported, 4},
      {patched(8, uint64_t{1} << 60), Errc::kBadRecord, 8},
      {patched(8, uint64_t{n - 1}), Errc::kBadRecord, 8},
      {patched(24, uint32_t{1000}), Errc::kBadRecord, 8},
      {patched(28, uint32_t{1} << 31), Errc::kBadRecord, 8},
      {patched(addrs + 8, uint64_t{0}), Errc::kBadRecord, addrs + 8},
      {patched(ends + 4, uint32_t{0}), Errc::kBadRecord, ends + 4},
      {patched(ends + 4 * (n + 1), uint32_t{1} << 30), Errc::kBadRecord, ends + 4 * (n + 1)},
      {patched(mods + 2, uint16_t{9}), Errc::kBadRecord, mods + 2},
  };
  for (size_t k = 0; k < lies.size(); k++) {
    SCOPED_TRACE(k);
    auto r = perfdata::KallsymsTable::open(lies[k].blob, 1000);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, lies[k].code) << r.error().to_string();
    EXPECT_EQ(r.error().offset.value_or(0), 1000 + lies[k].at) << r.error().to_string();
  }
  for (size_t cut = 0; cut < good.size(); cut += 7) {
    EXPECT_FALSE(perfdata::KallsymsTable::open(Bytes(good).first(cut), 0).ok()) << cut;
  }
}

// Lines out of address order are sorted; of aliases at one address the
// global name wins, then the one listed first, wherever the sort moved them.
TEST(KallsymsTableTest, SortsLinesAndKeepsTheFirstListedAlias) {
  constexpr char kUnsorted[] =
      "ffffffff81000300 T _etext\n"
      "ffffffff81000200 t z_local\n"
      "ffffffff81000100 t listed_first\n"
      "ffffffff81000000 T _text\n"
      "ffffffff81000200 T g_alias\n"
      "ffffffff81000100 t a_listed_second\n"
      "ffffffff81000200 t a_local_after\n"
      "ffffffff81000100 t b_listed_third\n";
  for (const bool blocked : {false, true}) {
    SCOPED_TRACE(blocked);
    const std::vector<std::byte> packed = blocked ? perfdata::encode_kallsyms_blocked(kUnsorted)
                                                  : perfdata::encode_kallsyms(kUnsorted);
    auto t = perfdata::KallsymsTable::open(packed, 0);
    ASSERT_TRUE(t.ok()) << t.error().to_string();
    std::vector<std::string> got;
    for (size_t i = 0; i < t->size(); i++) got.emplace_back(t->name(i));
    EXPECT_EQ(got, (std::vector<std::string>{"_text", "listed_first", "g_alias"}));
    EXPECT_EQ(t->etext(), 0xffffffff81000300u);
  }
}

// The table keeps what a lookup needs and nothing of the rest.
TEST(KallsymsTableTest, HoldsTextSymbolsInAddressOrder) {
  auto t = perfdata::KallsymsTable::from_text(kSnapshot);
  std::vector<std::string> got;
  for (size_t i = 0; i < t.size(); i++) {
    std::string line = std::string(t.name(i));
    if (t.module(i) != 0) line += " " + std::string(t.module_dso(t.module(i)));
    got.push_back(line);
  }
  EXPECT_EQ(got, (std::vector<std::string>{"_text", "start_kernel", "helper_alias", "mod_fn [mymod]",
                                           "mod_last [mymod]", "other_fn [othermod]"}));
  EXPECT_EQ(t.etext(), 0xffffffff81000300u);
  EXPECT_EQ(t.floor(0xffffffff81000000 - 1), t.size());
  EXPECT_EQ(t.floor(0xffffffff81000000), 0u);
  EXPECT_EQ(t.floor(0xffffffff810001ff), 1u);
  EXPECT_EQ(t.floor(0xffffffffffffffff), t.size() - 1);
  EXPECT_EQ(perfdata::KallsymsTable::from_text("").size(), 0u);
}

// --kallsyms FILE: the user's symbols name kernel code, with or without a
// snapshot in the file, and the file's snapshot is not opened.
TEST(KernelSymbolsTest, UserKallsymsReplaceTheSnapshot) {
  const std::string user = "ffffffff81000000 T _text\nffffffff81000100 T from_user_file\n";
  for (bool with_snapshot : {false, true}) {
    SCOPED_TRACE(with_snapshot);
    std::vector<std::byte> broken = perfdata::encode_kallsyms(kSnapshot);
    broken.resize(10);
    perfdata::Features features;
    if (with_snapshot) features.kallsyms_packed = broken;
    Symbolizer::Options o;
    o.kallsyms = perfdata::KallsymsTable::from_text(user);
    Symbolizer sym(features, o);
    sym.finish();
    EXPECT_EQ(sym.lookup(1, 0xffffffff81000150, 5, true).symbol, "from_user_file");
    EXPECT_FALSE(sym.kallsyms_error().has_value());
  }
}

TEST(KernelSymbolsTest, NoSnapshotMeansNoKallsyms) {
  perfdata::Features features;
  Symbolizer sym(features, {});
  sym.finish();
  Frame fr = sym.lookup(1, 0xffffffff81000150, 5, true);
  EXPECT_EQ(fr.kind, FrameKind::kUnknown);
  EXPECT_EQ(fr.unknown, Unknown::kNoKallsyms);
  // Kernel-half addresses are kernel lookups even if the caller said user.
  EXPECT_EQ(sym.lookup(1, 0xffffffff81000150, 5, false).unknown, Unknown::kNoKallsyms);
}

TEST(KernelSymbolsTest, BpfTimelineWinsOverSnapshot) {
  perfdata::Features features;
  features.kallsyms = kSnapshot;
  Symbolizer sym(features, {});
  testing::Feeder f(sym);
  f.ksym(0, 0xffffffffc0002000, 0x80, "bpf_prog_0123456789abcdef_foo");
  f.ksym(40, 0xffffffffc0002000, 0x80, "bpf_prog_0123456789abcdef_foo", true);
  sym.finish();
  EXPECT_EQ(sym.lookup(1, 0xffffffffc0002010, 5, true).kind, FrameKind::kBpf);
  EXPECT_EQ(sym.lookup(1, 0xffffffffc0002010, 50, true).unknown, Unknown::kBpfNotAlive);
}

// Two snapshots looked up in turn at the same addresses: each answers from
// its own symbols (a lookup remembers the previous symbol per thread), and
// set_table() then build() gives what build(text) gives.
TEST(KernelSymbolsTest, TwoSnapshotsAnswerForThemselves) {
  const std::string other =
      "ffffffff81000000 T _text\n"
      "ffffffff81000080 T other_start\n"
      "ffffffff81000300 T _etext\n";
  KernelSymbols a, b;
  a.add_kernel_map("[kernel.kallsyms]_text", 0xffffffff81000000, 0x300);
  a.build(kSnapshot);
  b.set_table(perfdata::KallsymsTable::from_text(other));
  b.add_kernel_map("[kernel.kallsyms]_text", 0xffffffff81000000, 0x300);
  b.build();
  for (int round = 0; round < 3; round++) {
    for (uint64_t ip : {0xffffffff81000150ull, 0xffffffff81000160ull, 0xffffffff81000010ull}) {
      SCOPED_TRACE(::testing::Message() << std::hex << "ip 0x" << ip);
      const auto sa = a.find(ip);
      const auto sb = b.find(ip);
      ASSERT_TRUE(sa.has_value());
      ASSERT_TRUE(sb.has_value());
      EXPECT_EQ(sa->name, ip < 0xffffffff81000100 ? "_text" : "start_kernel");
      EXPECT_EQ(sb->name, ip < 0xffffffff81000080 ? "_text" : "other_start");
    }
    // Past the end of the core text: nothing, from either.
    EXPECT_FALSE(a.find(0xffffffff81000300).has_value());
    EXPECT_FALSE(b.find(0xffffffff81000300).has_value());
  }
}

}  // namespace
}  // namespace bpfprof::symbols
