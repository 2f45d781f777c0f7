// SPDX-License-Identifier: Apache-2.0
// What a program costs (docs/cost.md), on a recording built here: samples
// whose kernel callchain is in a program (self), passes through it (callees)
// or is in the machinery of a hook it is attached at (dispatch, split and
// marked estimated where programs share the hook); hooks with no program
// alive and attached charge nobody, and bad chains charge only what they
// prove. The dispatch table in code and in docs/cost.md say the same.
#include "analysis/cost.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "analysis/aggregate.h"
#include "analysis/session.h"
#include "profile/group.h"
#include "report/render.h"
#include "testing/markdown_table.h"
#include "testing/paths.h"
#include "testing/perfdata_fixtures.h"
#include "testing/subprocess.h"

namespace bpfprof::analysis {
namespace {

using bpfprof::testing::SampleValues;
using bpfprof::testing::TrailerValues;

constexpr uint64_t kCallchainType = testing::kSampleType | PERF_SAMPLE_CALLCHAIN;
constexpr uint32_t kPid = 7;
constexpr uint64_t kUserIp = 0x400100;

// Kernel text of the recording's kallsyms snapshot, 0x1000 apart.
constexpr uint64_t kText = 0xffffffff81000000;
const std::vector<std::string> kKernelFunctions = {
    "do_syscall_64",  "syscall_trace_enter", "perf_trace_sys_enter", "perf_trace_buf_alloc",
    "trace_call_bpf", "htab_map_update_elem", "__bpf_trace_sys_enter", "bpf_trace_run2",
    "__bpf_trace_run", "bpf_test_run",        "_etext"};
uint64_t fn(std::string_view name, uint64_t off = 8) {
  for (size_t i = 0; i < kKernelFunctions.size(); i++) {
    if (kKernelFunctions[i] == name) return kText + i * 0x1000 + off;
  }
  ADD_FAILURE() << name;
  return 0;
}

// Programs: a on tracepoint/raw_syscalls/sys_enter; b and c both on
// raw_tp/sys_enter; d on the same tracepoint as a, unloaded before the
// samples; e attached nowhere known.
struct Prog {
  uint32_t id;
  char letter;
  uint64_t addr;
  const char* point;
};
const Prog kProgs[] = {
    {10, 'a', 0xffffffffc0001000, "tracepoint/raw_syscalls/sys_enter"},
    {11, 'b', 0xffffffffc0002000, "raw_tp/sys_enter"},
    {12, 'c', 0xffffffffc0003000, "raw_tp/sys_enter"},
    {13, 'd', 0xffffffffc0004000, "tracepoint/raw_syscalls/sys_enter"},
    {14, 'e', 0xffffffffc0005000, nullptr},
};
uint64_t prog(char letter, uint64_t off = 0x10) {
  for (const Prog& p : kProgs) {
    if (p.letter == letter) return p.addr + off;
  }
  return 0;
}

// The chains below: leaf first, each `times` times, with a user part
// after the kernel one.
struct Chain {
  std::vector<uint64_t> kernel;
  int times;
  std::vector<uint64_t> user = {kUserIp};
};
std::vector<Chain> chains() {
  const uint64_t tp_path[] = {fn("trace_call_bpf"), fn("perf_trace_sys_enter"),
                              fn("syscall_trace_enter"), fn("do_syscall_64")};
  const uint64_t raw_path[] = {fn("__bpf_trace_run"), fn("bpf_trace_run2"),
                               fn("__bpf_trace_sys_enter"), fn("syscall_trace_enter"),
                               fn("do_syscall_64")};
  auto under = [](std::vector<uint64_t> head, std::span<const uint64_t> tail) {
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  return {
      // a: 3 self, 4 callees (a map update it called), 5 dispatch.
      {under({prog('a')}, tp_path), 3},
      {under({fn("htab_map_update_elem"), prog('a')}, tp_path), 4},
      {{fn("perf_trace_buf_alloc"), fn("perf_trace_sys_enter"), fn("syscall_trace_enter"),
        fn("do_syscall_64")},
       5},
      // b: 6 self, c: 2 self, and 8 in the raw tracepoint's machinery they share.
      {under({prog('b')}, std::span(raw_path).subspan(1)), 6},
      {under({prog('c')}, std::span(raw_path).subspan(1)), 2},
      {std::vector<uint64_t>(std::begin(raw_path), std::end(raw_path)), 8},
      // A test run with no program recorded as test-run: nobody's.
      {{fn("bpf_test_run"), fn("do_syscall_64")}, 2},
      // Address 0 before the program frame: nothing proven.
      {{fn("htab_map_update_elem"), 0, prog('a'), fn("trace_call_bpf")}, 1},
      // A BPF address where nothing is loaded then (d's, after its unload).
      {{prog('d'), fn("trace_call_bpf")}, 1},
      // Kernel code that runs no program: nobody's.
      {{fn("do_syscall_64")}, 3},
      // e's own code.
      {{prog('e'), fn("do_syscall_64")}, 1},
      // Kernel code that runs no program, under a user stack the report
      // cannot name that ends in 0 (where the unwinder stopped): nobody's,
      // and nothing unproven (a chain's user part charges no program).
      {{fn("do_syscall_64")}, 2, {kUserIp, 0}},
  };
}

std::string write_recording(const std::string& path, bool callchains) {
  const uint64_t type = callchains ? kCallchainType : testing::kSampleType;
  auto w = perfdata::FileWriter::create(path, testing::two_attrs(type));
  if (!w.ok()) return w.error().to_string();
  auto side = [](uint64_t time) { return TrailerValues{kPid, kPid, time, testing::kDummyId, 0, 0}; };
  bool ok = w->append(testing::comm_record(type, kPid, kPid, "busy", side(1))).ok();
  for (const Prog& p : kProgs) {
    uint8_t tag[perf::kBpfTagSize];
    std::fill(std::begin(tag), std::end(tag), static_cast<uint8_t>(p.id));
    const std::string name = fmt::format("bpf_prog_{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}_{}",
                                         tag[0], tag[1], tag[2], tag[3], tag[4], tag[5], tag[6],
                                         tag[7], p.letter);
    ok = ok && w->append(testing::ksymbol_record(type, p.addr, 0x100, perf::kKsymTypeBpf, 0, name,
                                                 side(10))).ok();
    ok = ok && w->append(testing::bpf_event_record(type, perf::kBpfEventProgLoad, 0, p.id, tag,
                                                   side(10))).ok();
    if (p.letter == 'd') {
      ok = ok && w->append(testing::ksymbol_record(type, p.addr, 0x100, perf::kKsymTypeBpf,
                                                   perf::kKsymFlagUnregister, name, side(50))).ok();
      ok = ok && w->append(testing::bpf_event_record(type, perf::kBpfEventProgUnload, 0, p.id,
                                                     tag, side(50))).ok();
    }
  }
  uint64_t t = 100;
  for (const Chain& c : chains()) {
    for (int i = 0; i < c.times; i++) {
      SampleValues v;
      v.id = testing::kSampleId;
      v.ip = c.kernel.front();
      v.pid = v.tid = kPid;
      v.time = t++;
      v.period = 10;
      if (callchains) {
        v.callchain = {perf::kContextKernel};
        v.callchain.insert(v.callchain.end(), c.kernel.begin(), c.kernel.end());
        v.callchain.push_back(perf::kContextUser);
        v.callchain.insert(v.callchain.end(), c.user.begin(), c.user.end());
      }
      ok = ok && w->append(testing::sample_record(type, v, perf::kMiscKernel)).ok();
    }
  }
  if (!ok) return "append";
  perfdata::Features f;
  std::string kallsyms;
  for (size_t i = 0; i < kKernelFunctions.size(); i++) {
    kallsyms += fmt::format("{:x} T {}\n", kText + i * 0x1000, kKernelFunctions[i]);
  }
  f.kallsyms = kallsyms;
  f.attach.emplace();
  for (const Prog& p : kProgs) {
    if (p.point) f.attach->entries.push_back({p.id, 0, perfdata::AttachEntry::kAtStart, 0, p.point});
  }
  Status closed = w->close(f);
  return closed.ok() ? "" : closed.error().to_string();
}

const ProgramRow& row(const ReportData& d, char letter) {
  for (const ProgramRow& p : d.programs) {
    if (p.name.ends_with(std::string("_") + letter) || p.name == std::string(1, letter)) return p;
  }
  static const ProgramRow none;
  ADD_FAILURE() << "no program " << letter;
  return none;
}

class CostTest : public ::testing::Test {
 protected:
  ReportData report(bool callchains, AggregateOptions o = {}) {
    const std::string path = dir_.file(callchains ? "g.data" : "flat.data");
    EXPECT_EQ(write_recording(path, callchains), "");
    auto session = Session::open(path, SessionOptions{});
    EXPECT_TRUE(session.ok()) << session.error().to_string();
    if (!session.ok()) return {};
    return aggregate(**session, o);
  }
  testing::TempDir dir_;
};

TEST_F(CostTest, SelfCalleesAndDispatchGoToTheProgramThatCausedThem) {
  for (const bool stacks : {false, true}) {
    for (const unsigned threads : {1u, 2u}) {
      SCOPED_TRACE(fmt::format("stacks {} threads {}", stacks, threads));
      AggregateOptions o;
      o.stacks = stacks;
      o.threads = threads;
      const ReportData d = report(true, o);
      ASSERT_EQ(d.programs.size(), 5u);
      EXPECT_TRUE(d.callchains);
      const ProgramRow& a = row(d, 'a');
      EXPECT_EQ(a.samples, 3u);
      EXPECT_EQ(a.callee_samples, 4u);
      EXPECT_EQ(a.dispatch_samples, 5u);  // d, on the same hook, was gone
      EXPECT_EQ(a.total_samples(), 12u);
      EXPECT_FALSE(a.dispatch_estimated);
      // b and c share the raw tracepoint: its 8 samples split 6:2, estimated.
      const ProgramRow& b = row(d, 'b');
      const ProgramRow& c = row(d, 'c');
      EXPECT_EQ(b.samples, 6u);
      EXPECT_EQ(c.samples, 2u);
      EXPECT_EQ(b.callee_samples + c.callee_samples, 0u);
      EXPECT_EQ(b.dispatch_samples, 6u);
      EXPECT_EQ(c.dispatch_samples, 2u);
      EXPECT_TRUE(b.dispatch_estimated);
      EXPECT_TRUE(c.dispatch_estimated);
      EXPECT_EQ(row(d, 'd').total_samples(), 0u);
      EXPECT_EQ(row(d, 'e').total_samples(), 1u);
      EXPECT_EQ(d.profile.diagnostics()[Diag::kBpfDispatchUnattributed], 2u);
      EXPECT_EQ(d.profile.diagnostics()[Diag::kBpfCostUnproven], 2u);
      EXPECT_EQ(d.profile.diagnostics()[Diag::kBpfSamplesUnattributed], 1u);
    }
  }
}

TEST_F(CostTest, SortKeysCountTotalOrSelf) {
  const ReportData d = report(true);
  report::RenderOptions o;
  o.bpf_only = true;
  auto by_prog = [&](bool total) {
    o.cost_total = total;
    std::map<std::string, uint64_t> out;
    for (const profile::Row& r : profile::group(d.profile, report::group_options(d, o, {profile::SortKey::kProg}))) {
      out[r.values[0].substr(r.values[0].size() - 1)] += r.counts.samples;
    }
    return out;
  };
  EXPECT_EQ(by_prog(true), (std::map<std::string, uint64_t>{{"a", 12}, {"b", 12}, {"c", 4}, {"e", 1}}));
  EXPECT_EQ(by_prog(false), (std::map<std::string, uint64_t>{{"a", 3}, {"b", 6}, {"c", 2}, {"e", 1}}));
  // The owner line counts the same.
  uint64_t owners = 0;
  for (const OwnerCost& c : cost_by_owner(d)) owners += c.samples;
  EXPECT_EQ(owners, 12u + 12 + 4 + 1);
  const std::string text = report::render_text(d, report::RenderOptions{});
  EXPECT_NE(text.find("Dispatch"), std::string::npos) << text;
  EXPECT_NE(text.find("~6"), std::string::npos) << text;
}

TEST_F(CostTest, WithoutCallchainsOnlySelfAndTheReportSaysWhy) {
  const ReportData d = report(false);
  EXPECT_FALSE(d.callchains);
  EXPECT_EQ(row(d, 'a').samples, 3u + 0);  // the leaves in a
  EXPECT_EQ(row(d, 'a').callee_samples + row(d, 'a').dispatch_samples, 0u);
  EXPECT_EQ(row(d, 'b').total_samples(), 6u);
  const std::string text = report::render_text(d, report::RenderOptions{});
  EXPECT_NE(text.find("the recording has no callchains"), std::string::npos) << text;
}

TEST(DispatchTable, PatternsMatchAndFirstEntryWins) {
  ASSERT_NE(dispatch_frame("perf_trace_sys_enter"), nullptr);
  EXPECT_EQ(dispatch_frame("perf_trace_sys_enter")->pattern, "perf_trace_*");
  EXPECT_EQ(dispatch_frame("perf_trace_buf_alloc")->pattern, "perf_trace_buf_alloc");
  EXPECT_EQ(dispatch_frame("__bpf_trace_run")->pattern, "__bpf_trace_run");
  EXPECT_EQ(dispatch_frame("__bpf_trace_sched_switch")->pattern, "__bpf_trace_*");
  EXPECT_EQ(dispatch_frame("htab_map_update_elem"), nullptr);
  EXPECT_EQ(dispatch_frame("trace_call_bp"), nullptr);
}

// docs/cost.md's table: one row per entry, in order, with its hook, points
// and reason.
TEST(DispatchTable, DocsListEveryEntryAsDeclared) {
  const std::vector<std::string> rows = bpfprof::testing::markdown_table_rows(
      BPFPROF_COST_DOC, "| frame | hook | programs attached at | why it is the hook's |");
  ASSERT_FALSE(rows.empty()) << BPFPROF_COST_DOC << ": no table";
  std::vector<std::string> want;
  for (const DispatchFrame& e : kDispatchFrames) {
    std::string points;
    for (size_t at = 0; at < e.points.size();) {
      const size_t space = std::min(e.points.find(' ', at), e.points.size());
      points += fmt::format("{}`{}{}`", points.empty() ? "" : " ", e.points.substr(at, space - at),
                            e.named ? "…/*" : "");
      at = space + 1;
    }
    want.push_back(fmt::format("| `{}` | {}{}{} | {} | {} |", e.pattern, e.hook,
                               e.leaf_only ? " (leaf only)" : "",
                               e.run_by_owner ? " (the caller's own)" : "", points, e.why));
  }
  EXPECT_EQ(rows, want);
}

}  // namespace
}  // namespace bpfprof::analysis
