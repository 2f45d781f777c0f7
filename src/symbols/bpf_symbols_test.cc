// SPDX-License-Identifier: Apache-2.0
// BPF timeline: register/unregister, address reuse, trampolines overlapping
// programs, synthesized programs, out-of-order side-band, program list.
#include "symbols/bpf_symbols.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bpf/prog_info.h"
#include "testing/symbolizer_feeder.h"

namespace bpfprof::symbols {
namespace {

using testing::Feeder;
using testing::tag_of;

std::string ksym(uint8_t tag_byte, const std::string& name) {
  return bpf::ksym_name(tag_of(tag_byte), name);
}

// The scenario every table row below is checked against:
//   t=0    alpha   [0x1000,0x1100)  synthesized (KSYMBOL + PROG_LOAD at time 0)
//   t=0    tramp   [0x3000,0x4000)  page-sized trampoline, no BPF_EVENT
//   t=0    carol   [0x3100,0x3180), dave [0x3800,0x3880)  beside/inside the trampoline
//   t=100  beta    [0x2000,0x2080)  loaded; unloaded at t=200
//   t=300  gamma   [0x2000,0x2100)  loaded at beta's old address
class BpfTimelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Feeder f(sym_);
    f.ksym(0, 0x1000, 0x100, ksym(0xa1, "alpha"));
    f.load(0, 1, tag_of(0xa1));
    f.ksym(0, 0x3000, 0x1000, "bpf_trampoline_6442450944");
    f.ksym(0, 0x3100, 0x80, ksym(0xc3, "carol"));
    f.load(0, 4, tag_of(0xc3));
    f.ksym(0, 0x3800, 0x80, ksym(0xd4, "dave"));
    f.load(0, 5, tag_of(0xd4));
    f.ksym(100, 0x2000, 0x80, ksym(0xb2, "beta"));
    f.load(100, 2, tag_of(0xb2));
    f.ksym(200, 0x2000, 0x80, ksym(0xb2, "beta"), /*unregister=*/true);
    f.unload(200, 2, tag_of(0xb2));
    f.ksym(300, 0x2000, 0x100, ksym(0xe5, "gamma"));
    f.load(300, 3, tag_of(0xe5));
    sym_.finish();
  }
  perfdata::Features features_;
  Symbolizer sym_{features_, {}};
};

struct Case {
  uint64_t ip, time;
  FrameKind kind;
  std::string symbol;  // "" for unknown frames
  Unknown unknown = Unknown::kNone;
  std::string program = "";  // bpf_programs()[bpf_program - 1].name
};

TEST_F(BpfTimelineTest, LookupsByAddressAndTime) {
  const std::vector<Case> cases = {
      {0x1050, 0, FrameKind::kBpf, ksym(0xa1, "alpha"), Unknown::kNone, "alpha"},
      {0x1050, 999, FrameKind::kBpf, ksym(0xa1, "alpha"), Unknown::kNone, "alpha"},
      {0x2010, 50, FrameKind::kUnknown, "", Unknown::kBpfNotAlive},   // before beta
      {0x2010, 100, FrameKind::kBpf, ksym(0xb2, "beta"), Unknown::kNone, "beta"},  // load time
      {0x2010, 150, FrameKind::kBpf, ksym(0xb2, "beta"), Unknown::kNone, "beta"},
      {0x2090, 150, FrameKind::kUnknown, "", Unknown::kBpfNotAlive},  // past beta's end
      {0x2010, 200, FrameKind::kUnknown, "", Unknown::kBpfNotAlive},  // unload time
      {0x2010, 250, FrameKind::kUnknown, "", Unknown::kBpfNotAlive},  // between
      {0x2010, 300, FrameKind::kBpf, ksym(0xe5, "gamma"), Unknown::kNone, "gamma"},
      {0x2090, 350, FrameKind::kBpf, ksym(0xe5, "gamma"), Unknown::kNone, "gamma"},
      {0x3010, 10, FrameKind::kBpfImage, "bpf_trampoline_6442450944"},
      {0x3110, 10, FrameKind::kBpf, ksym(0xc3, "carol"), Unknown::kNone, "carol"},
      {0x3400, 10, FrameKind::kBpfImage, "bpf_trampoline_6442450944"},  // between the two
      {0x3810, 10, FrameKind::kBpf, ksym(0xd4, "dave"), Unknown::kNone, "dave"},
      {0x3900, 10, FrameKind::kBpfImage, "bpf_trampoline_6442450944"},
      {0x5000, 10, FrameKind::kUnknown, "", Unknown::kNoKallsyms},  // no BPF, no snapshot
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << std::hex << "ip 0x" << c.ip << std::dec << " t " << c.time);
    Frame f = sym_.lookup(1, c.ip, c.time, /*kernel=*/true);
    EXPECT_EQ(f.kind, c.kind);
    EXPECT_EQ(f.unknown, c.unknown);
    if (!c.symbol.empty()) {
      EXPECT_EQ(f.symbol, c.symbol);
    }
    if (c.program.empty()) {
      EXPECT_EQ(f.bpf_program, 0u);
    } else {
      ASSERT_GT(f.bpf_program, 0u);
      ASSERT_LE(f.bpf_program, sym_.bpf_programs().size());
      EXPECT_EQ(sym_.bpf_programs()[f.bpf_program - 1].name, c.program);
      EXPECT_EQ(f.dso, "[bpf]");
      EXPECT_EQ(f.bpf_function, 0u);
    }
  }
}

TEST_F(BpfTimelineTest, ProgramsFromLoadAndUnload) {
  const auto& progs = sym_.bpf_programs();
  ASSERT_EQ(progs.size(), 5u);
  EXPECT_EQ(progs[0].name, "alpha");
  EXPECT_EQ(progs[0].load_time, 0u);
  EXPECT_FALSE(progs[0].unload_time);
  EXPECT_EQ(progs[0].id, 1u);
  EXPECT_EQ(progs[0].tag, tag_of(0xa1));
  ASSERT_EQ(progs[0].functions.size(), 1u);
  EXPECT_EQ(progs[0].functions[0].addr, 0x1000u);
  EXPECT_EQ(progs[0].functions[0].len, 0x100u);
  EXPECT_EQ(progs[0].info, nullptr);
  EXPECT_EQ(progs[3].name, "beta");
  EXPECT_EQ(progs[3].load_time, 100u);
  EXPECT_EQ(progs[3].unload_time, 200u);
  EXPECT_EQ(progs[4].name, "gamma");
  EXPECT_EQ(progs[4].load_time, 300u);
  const DiagCounts& d = sym_.diagnostics();
  EXPECT_EQ(d[Diag::kProgramsWithoutInfo], 5u);
  EXPECT_EQ(d[Diag::kBpfEventWithoutKsymbol], 0u);
  EXPECT_EQ(d[Diag::kKsymbolUnregisterUnknown], 0u);
}

TEST(BpfSymbolsTest, SubprogramsMainFirstAndFunctionIndex) {
  perfdata::Features features;
  Symbolizer sym(features, {});
  Feeder f(sym);
  // The kernel emits func[0] (main) first; a subprogram carries its own tag.
  f.ksym(10, 0x8000, 0x40, ksym(0x11, "main_fn"), false, 2);
  f.ksym(10, 0x8100, 0x20, ksym(0x22, "sub_fn"), false, 2);
  f.ksym(10, 0x9000, 0x20, ksym(0x33, "other"), false, 3);  // another CPU's program
  f.load(10, 7, tag_of(0x11), 2);
  sym.finish();
  ASSERT_EQ(sym.bpf_programs().size(), 1u);
  const BpfProgram& p = sym.bpf_programs()[0];
  EXPECT_EQ(p.name, "main_fn");
  ASSERT_EQ(p.functions.size(), 2u);
  EXPECT_EQ(p.functions[1].ksym, ksym(0x22, "sub_fn"));
  Frame sub = sym.lookup(0, 0x8110, 20, true);
  EXPECT_EQ(sub.bpf_program, 1u);
  EXPECT_EQ(sub.bpf_function, 1u);
  EXPECT_EQ(sub.symbol_start, 0x8100u);
  Frame other = sym.lookup(0, 0x9010, 20, true);
  EXPECT_EQ(other.kind, FrameKind::kBpf);
  EXPECT_EQ(other.bpf_program, 0u) << "no PROG_LOAD claimed it";
}

TEST(BpfSymbolsTest, StoredInfoNamesProgramAndCoversLostKsymbol) {
  perfdata::Features features;
  bpf::ProgInfo info;
  info.info.id = 9;
  const bpf::Tag tag = tag_of(0x44);
  std::memcpy(info.info.tag, tag.data(), tag.size());
  std::strcpy(info.info.name, "long_program_na");  // the kernel cuts at 15 chars
  info.jited_ksyms = {0xa000, 0xa100};
  info.jited_func_lens = {0x40, 0x30};
  info.prog_tags = {tag, tag_of(0x55)};
  features.bpf_prog_info.push_back(info);
  Symbolizer sym(features, {});
  Feeder f(sym);
  f.ksym(5, 0xa000, 0x40, ksym(0x44, "long_program_name_in_full"));
  // No KSYMBOL for the subprogram (lost): the info still places it.
  f.load(5, 9, tag);
  f.ksym(6, 0xffff, 8, "x", /*unregister=*/true);
  sym.finish();
  ASSERT_EQ(sym.bpf_programs().size(), 1u);
  const BpfProgram& p = sym.bpf_programs()[0];
  EXPECT_EQ(p.info, &features.bpf_prog_info[0]);
  EXPECT_EQ(p.name, "long_program_name_in_full");
  ASSERT_EQ(p.functions.size(), 2u);
  Frame sub = sym.lookup(0, 0xa110, 7, true);
  EXPECT_EQ(sub.kind, FrameKind::kBpf);
  EXPECT_EQ(sub.bpf_program, 1u);
  EXPECT_EQ(sub.bpf_function, 1u);
  EXPECT_EQ(sym.diagnostics()[Diag::kProgramsWithoutInfo], 0u);
  EXPECT_EQ(sym.diagnostics()[Diag::kKsymbolUnregisterUnknown], 1u);
}

// The Symbolizer owns time order: records added out of order are applied in
// time order (counting them is the reader's business: Session).
TEST(BpfSymbolsTest, OutOfOrderSidebandAppliedInTimeOrder) {
  perfdata::Features features;
  Symbolizer sym(features, {});
  Feeder f(sym);
  f.ksym(100, 0x1000, 0x10, ksym(0x01, "late"));
  f.load(100, 1, tag_of(0x01));
  f.ksym(50, 0x2000, 0x10, ksym(0x02, "early"));  // older than what came before
  f.load(50, 2, tag_of(0x02));
  f.ksym(70, 0x2000, 0x10, ksym(0x02, "early"), /*unregister=*/true);
  sym.finish();
  EXPECT_EQ(sym.lookup(0, 0x2004, 60, true).symbol, ksym(0x02, "early"));
  EXPECT_EQ(sym.lookup(0, 0x2004, 80, true).unknown, Unknown::kBpfNotAlive);
  EXPECT_EQ(sym.lookup(0, 0x1004, 150, true).symbol, ksym(0x01, "late"));
}

TEST(BpfSymbolsTest, ConsumesTheSidebandItApplies) {
  for (uint32_t t : {perf::kRecordKsymbol, perf::kRecordBpfEvent, perf::kRecordMmap,
                     perf::kRecordMmap2, perf::kRecordComm, perf::kRecordFork, perf::kRecordExit}) {
    EXPECT_TRUE(Symbolizer::consumes(t)) << t;
  }
  for (uint32_t t : {perf::kRecordSample, perf::kRecordLost, perf::kRecordThrottle,
                     perf::kRecordFinishedRound}) {
    EXPECT_FALSE(Symbolizer::consumes(t)) << t;
  }
}

TEST(BpfSymbolsTest, ReRegisterWithoutUnregisterEndsThePrevious) {
  perfdata::Features features;
  Symbolizer sym(features, {});
  Feeder f(sym);
  f.ksym(10, 0x1000, 0x40, ksym(0x01, "first"));
  f.ksym(20, 0x1000, 0x40, ksym(0x02, "second"));
  sym.finish();
  EXPECT_EQ(sym.lookup(0, 0x1010, 15, true).symbol, ksym(0x01, "first"));
  EXPECT_EQ(sym.lookup(0, 0x1010, 25, true).symbol, ksym(0x02, "second"));
  EXPECT_EQ(sym.diagnostics()[Diag::kBpfEventWithoutKsymbol], 0u);
}

TEST(BpfSymbolsTest, NameFromKsym) {
  EXPECT_EQ(program_name_from_ksym("bpf_prog_0123456789abcdef_foo"), "foo");
  EXPECT_EQ(program_name_from_ksym("bpf_prog_0123456789abcdef"), "bpf_prog_0123456789abcdef");
  EXPECT_EQ(program_name_from_ksym("bpf_trampoline_1"), "bpf_trampoline_1");
  EXPECT_TRUE(is_bpf_image_name("bpf_dispatcher_xdp"));
  EXPECT_FALSE(is_bpf_image_name("bpf_prog_0123456789abcdef_x"));
}

}  // namespace
}  // namespace bpfprof::symbols
