// SPDX-License-Identifier: Apache-2.0
// Pass 1 walked as two halves at once gives what one walk gives: header,
// counters, round order facts, chunks, reports and script; a guessed half
// boundary inside a record is caught and the file walked whole. Pass 2 split
// between threads in any way gives the single-thread report.
#include "analysis/session.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "analysis/aggregate.h"
#include "testing/perfdata_fixtures.h"
#include "report/render.h"
#include "script/script.h"
#include "testing/subprocess.h"

namespace bpfprof::analysis {
namespace {

using bpfprof::testing::ByteVec;
using bpfprof::testing::SampleValues;
using bpfprof::testing::TrailerValues;

constexpr uint64_t kSampleType = testing::kSampleType | PERF_SAMPLE_CALLCHAIN;
// A FINISHED_ROUND header (type 68, size 8) read as one u64.
constexpr uint64_t kFakeHeader = uint64_t{perf::kRecordFinishedRound} | (uint64_t{8} << 48);

struct Shape {
  bool by_rounds = true;     // every sample keeps the round contract
  bool fake_middle = false;  // a record full of header look-alikes at the middle
};

std::string write_recording(const std::string& path, const Shape& shape) {
  auto w = perfdata::FileWriter::create(path, testing::two_attrs(kSampleType));
  if (!w.ok()) return w.error().to_string();
  auto side = [](uint64_t time) {
    return TrailerValues{0, 0, time, testing::kDummyId, 0, 0};
  };
  auto put = [&](const ByteVec& r) { return w->append(r).ok(); };
  constexpr uint64_t kA = 0xffffffffc0001000;
  if (!put(bpfprof::testing::ksymbol_record(kSampleType, kA, 0x200, perf::kKsymTypeBpf, 0,
                                            "bpf_prog_1111111111111111_a", side(1)))) {
    return "append";
  }
  constexpr uint64_t kSamples = 60000;
  uint64_t state = 3;
  auto sample = [&](uint64_t i, uint64_t time, size_t chain) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    SampleValues s;
    s.id = testing::kSampleId;
    s.ip = kA + (state >> 33) % 0x200;
    s.pid = s.tid = static_cast<uint32_t>(1 + i % 3);
    s.time = time;
    s.period = 1;
    s.callchain = {perf::kContextKernel, s.ip};
    for (size_t k = 0; k < chain; k++) s.callchain.push_back(kFakeHeader);
    return bpfprof::testing::sample_record(kSampleType, s, perf::kMiscKernel);
  };
  for (uint64_t i = 0; i < kSamples; i++) {
    // Times jitter within a round, as per-CPU rings interleave.
    uint64_t time = 1000 + i * 10 + (i % 7) * 13;
    if (!shape.by_rounds && i == kSamples * 3 / 4) time = 500;  // far older than a round
    if (shape.fake_middle && i == kSamples / 2) {
      if (!put(sample(i, time, 2000))) return "append";
      continue;
    }
    if (!put(sample(i, time, 0))) return "append";
    if (i % 997 == 0) {
      // Side-band now and then: a comm, a lost record, one older than allowed,
      // an unknown record type.
      const uint32_t pid = static_cast<uint32_t>(1 + i % 3);
      if (!put(bpfprof::testing::comm_record(kSampleType, pid, pid, "p" + std::to_string(i),
                                             side(time)))) {
        return "append";
      }
      if (i % 3 == 0 && !put(bpfprof::testing::comm_record(
                            kSampleType, 9, 9, "late", side(time > 40000 ? time - 40000 : 1)))) {
        return "append";
      }
      if (i % 5 == 0 && !put(bpfprof::testing::RecordWriter(40, 0).u64(i).finish()))
        return "append";
    }
    if (i % 1000 == 999 && !w->finish_round().ok()) return "round";
  }
  Status closed = w->close(perfdata::Features{});
  return closed.ok() ? "" : closed.error().to_string();
}

std::string script_of(const Session& s, const script::ScriptOptions& o = {}) {
  std::FILE* f = std::tmpfile();
  if (!f) return "tmpfile";
  Status written = script::write_script(s, o, f);
  std::string out;
  std::rewind(f);
  char buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  std::fclose(f);
  return written.ok() ? out : written.error().to_string();
}

// The script text of the recording at `path`, line by line (or the error).
std::vector<std::string> script_lines_of(const std::string& path,
                                         const script::ScriptOptions& o = {}) {
  auto s = Session::open(path, SessionOptions{});
  if (!s.ok()) return {s.error().to_string()};
  const std::string out = script_of(**s, o);
  std::vector<std::string> lines;
  for (size_t at = 0; at < out.size();) {
    const size_t end = out.find('\n', at);
    lines.push_back(out.substr(at, end - at));
    at = end == std::string::npos ? out.size() : end + 1;
  }
  return lines;
}

void expect_same_sessions(const std::string& path, size_t parallel_pieces) {
  SessionOptions whole_opts, halves_opts;
  whole_opts.parallel_min_bytes = std::numeric_limits<uint64_t>::max();
  halves_opts.parallel_min_bytes = 0;
  auto whole = Session::open(path, whole_opts);
  auto halves = Session::open(path, halves_opts);
  ASSERT_TRUE(whole.ok()) << whole.error().to_string();
  ASSERT_TRUE(halves.ok()) << halves.error().to_string();
  const Session& a = **whole;
  const Session& b = **halves;
  EXPECT_EQ(a.pass1_pieces(), 1u);
  EXPECT_EQ(b.pass1_pieces(), parallel_pieces);
  EXPECT_EQ(a.header().records, b.header().records);
  EXPECT_EQ(a.header().start_ns, b.header().start_ns);
  EXPECT_EQ(a.header().end_ns, b.header().end_ns);
  EXPECT_EQ(a.header().lost, b.header().lost);
  EXPECT_EQ(a.counters(), b.counters());
  EXPECT_GT(a.counters()[Diag::kSidebandOutOfOrder], 0u);
  EXPECT_GT(a.counters()[Diag::kRecordsUnknownType], 0u);
  EXPECT_EQ(a.sample_count(), b.sample_count());
  EXPECT_EQ(a.sample_order().by_rounds, b.sample_order().by_rounds);
  EXPECT_EQ(a.sample_order().max_pending, b.sample_order().max_pending);
  const auto& ra = a.sample_order().rounds;
  const auto& rb = b.sample_order().rounds;
  ASSERT_EQ(ra.size(), rb.size());
  EXPECT_GT(ra.size(), 50u);
  for (size_t i = 0; i < ra.size(); i++) {
    EXPECT_EQ(ra[i].offset, rb[i].offset) << "round " << i;
    EXPECT_EQ(ra[i].limit, rb[i].limit) << "round " << i;
  }
  report::RenderOptions render;
  const std::string report_a = report::render_text(aggregate(a, {}), render);
  EXPECT_EQ(report_a, report::render_text(aggregate(b, {}), render));
  EXPECT_NE(report_a.find("bpf_prog_1111111111111111_a"), std::string::npos);
  EXPECT_EQ(script_of(a), script_of(b));
}

TEST(ScriptLines, AThreadRenamedMidwayIsPrintedUnderEachNameInTurn) {
  // One thread on one CPU, samples back to back (script keeps the text of a
  // line's thread fields from line to line), renamed at time 500 and 800,
  // the second time to a name of another length.
  bpfprof::testing::TempDir dir;
  const std::string path = dir.file("renamed.data");
  {
    auto w = perfdata::FileWriter::create(path, testing::two_attrs(kSampleType));
    ASSERT_TRUE(w.ok());
    auto side = [](uint64_t time) {
      return TrailerValues{7, 7, time, testing::kDummyId, 0, 3};
    };
    auto sample = [](uint64_t time) {
      SampleValues s;
      s.id = testing::kSampleId;
      s.ip = 0x401000;
      s.pid = s.tid = 7;
      s.cpu = 3;
      s.time = time;
      s.period = 1;
      s.callchain = {perf::kContextUser, s.ip};
      return bpfprof::testing::sample_record(kSampleType, s, perf::kMiscUser);
    };
    using bpfprof::testing::comm_record;
    ASSERT_TRUE(w->append(comm_record(kSampleType, 7, 7, "before", side(1))).ok());
    for (uint64_t t = 100; t < 1200; t += 100) {
      if (t == 500) {
        ASSERT_TRUE(w->append(comm_record(kSampleType, 7, 7, "after", side(t))).ok());
      }
      if (t == 800) {
        ASSERT_TRUE(w->append(comm_record(kSampleType, 7, 7, "renamed-long", side(t))).ok());
      }
      ASSERT_TRUE(w->append(sample(t + 1)).ok());
    }
    ASSERT_TRUE(w->close(perfdata::Features{}).ok());
  }
  std::vector<std::string> names;
  for (const std::string& line : script_lines_of(path)) {
    const size_t first = line.find_first_not_of(' ');
    names.push_back(line.substr(first, line.find(' ', first) - first));
  }
  const std::vector<std::string> want = {"before", "before", "before",       "before",
                                         "after",  "after",  "after",        "renamed-long",
                                         "renamed-long", "renamed-long", "renamed-long"};
  EXPECT_EQ(names, want);
}

TEST(ScriptLines, NumbersOfEveryWidthAndNamesOfAnyScriptMatchTheFormat) {
  // Instruction pointers and symbol offsets of every hex width (the line
  // writer has a short and a long path for each), thread names ASCII and not
  // taking turns on one CPU (the line writer keeps the text of ASCII ones),
  // against the format written out with fmt.
  bpfprof::testing::TempDir dir;
  const std::string path = dir.file("widths.data");
  constexpr uint64_t kProg = 0xffffffff00000000;  // a BPF symbol 4 GiB long
  struct Line {
    uint32_t pid, cpu;
    uint64_t ip, time;
    bool kernel;
  };
  std::vector<Line> lines;
  uint64_t time = 1'999'999'000;
  for (unsigned digits = 1; digits <= 12; digits++) {
    const uint64_t user_ip = 0x123456789abcull >> (4 * (12 - digits));
    const uint64_t off = digits <= 8 ? 0x89abcdefull >> (4 * (8 - digits)) : 0;
    for (uint32_t pid : {7u, 8u}) {
      lines.push_back({pid, 3, user_ip, time += 777, false});
      if (digits <= 8) lines.push_back({pid, 3, kProg + off, time += 777, true});
    }
    lines.push_back({7, 1, 0xffffffff80000000 + digits, time += 777, true});  // no symbol
  }
  // A task sampled past its pid's release (the kernel says -1) and one no
  // COMM named: printed as perf prints them, "-1" and ":tid".
  lines.push_back({0xffffffff, 0, 0x401000, time += 777, false});
  lines.push_back({9, 0, 0x401000, time += 777, false});
  const std::map<uint32_t, std::string> comms = {{7, "ascii-name"}, {8, "caf\xc3\xa9-\xc3\xbc"}};
  {
    auto w = perfdata::FileWriter::create(path, testing::two_attrs(kSampleType));
    ASSERT_TRUE(w.ok());
    auto side = [](uint32_t pid) {
      return TrailerValues{pid, pid, 1, testing::kDummyId, 0, 3};
    };
    ASSERT_TRUE(w->append(bpfprof::testing::ksymbol_record(kSampleType, kProg, 0xfffffff0,
                                                           perf::kKsymTypeBpf, 0, "wide_prog",
                                                           side(0)))
                    .ok());
    for (const auto& [pid, comm] : comms) {
      ASSERT_TRUE(w->append(bpfprof::testing::comm_record(kSampleType, pid, pid, comm, side(pid))).ok());
    }
    for (const Line& l : lines) {
      SampleValues s;
      s.id = testing::kSampleId;
      s.ip = l.ip;
      s.pid = s.tid = l.pid;
      s.cpu = l.cpu;
      s.time = l.time;
      s.period = 1;
      s.callchain = {l.kernel ? perf::kContextKernel : perf::kContextUser, s.ip};
      ASSERT_TRUE(w->append(bpfprof::testing::sample_record(
                                kSampleType, s, l.kernel ? perf::kMiscKernel : perf::kMiscUser))
                      .ok());
    }
    ASSERT_TRUE(w->close(perfdata::Features{}).ok());
  }
  auto s = Session::open(path, SessionOptions{});
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  std::string want;
  for (const Line& l : lines) {
    const auto id = static_cast<int32_t>(l.pid);
    const std::string comm = comms.contains(l.pid) ? comms.at(l.pid) : fmt::format(":{}", id);
    want += fmt::format("{:>16} {:>7}/{:<7} [{:03}] {}.{:06}: {:16x} ", comm, id, id, l.cpu,
                        l.time / 1000000000, l.time % 1000000000 / 1000, l.ip);
    if (l.kernel && l.ip >= kProg && l.ip < kProg + 0xfffffff0) {
      want += fmt::format("wide_prog+0x{:x} ([bpf])\n", l.ip - kProg);
    } else {
      want += "[unknown] ([unknown])\n";
    }
  }
  EXPECT_EQ(script_of(**s), want);
}

TEST(ScriptLines, AnAddressReusedByAnotherProgramIsNamedByTheProgramAliveThen) {
  // One ip sampled again and again while program A, then nothing, then
  // program B hold it (script keeps the end of a kernel line per ip for as
  // long as the symbolizer's answer there holds).
  bpfprof::testing::TempDir dir;
  const std::string path = dir.file("reused.data");
  constexpr uint64_t kAddr = 0xffffffffc0004000, kIp = kAddr + 0x24, kCaller = kAddr + 0x40;
  {
    auto w = perfdata::FileWriter::create(path, testing::two_attrs(kSampleType));
    ASSERT_TRUE(w.ok());
    auto side = [](uint64_t time) {
      return TrailerValues{0, 0, time, testing::kDummyId, 0, 0};
    };
    using bpfprof::testing::ksymbol_record;
    auto ksym = [&](uint64_t time, const std::string& name, bool unregister) {
      return w->append(ksymbol_record(kSampleType, kAddr, 0x100, perf::kKsymTypeBpf,
                                      unregister ? perf::kKsymFlagUnregister : 0, name,
                                      side(time)))
          .ok();
    };
    ASSERT_TRUE(ksym(100, "bpf_prog_aaaaaaaaaaaaaaaa_first", false));
    for (uint64_t t = 200; t < 1400; t += 100) {
      if (t == 500) {
        ASSERT_TRUE(ksym(t, "bpf_prog_aaaaaaaaaaaaaaaa_first", true));
      }
      if (t == 800) {
        ASSERT_TRUE(ksym(t, "bpf_prog_bbbbbbbbbbbbbbbb_second", false));
      }
      SampleValues v;
      v.id = testing::kSampleId;
      v.ip = kIp;
      v.pid = v.tid = 5;
      v.cpu = 1;
      v.time = t + 1;
      v.period = 1;
      v.callchain = {perf::kContextKernel, kIp, kCaller};
      ASSERT_TRUE(w->append(bpfprof::testing::sample_record(kSampleType, v, perf::kMiscKernel)).ok());
    }
    ASSERT_TRUE(w->close(perfdata::Features{}).ok());
  }
  // With callchains, each frame line is kept per address while the answer
  // there holds: both frames follow the program alive at each sample.
  script::ScriptOptions chains;
  chains.callchain = true;
  chains.fields = script::kDefaultFields;
  std::vector<std::string> frames;
  for (const std::string& line : script_lines_of(path, chains)) {
    if (line.empty() || line[0] != '\t') continue;
    const size_t sym_at = line.find(' ', line.find_first_not_of(" \t")) + 1;
    frames.push_back(line.substr(sym_at, line.find(' ', sym_at) - sym_at));
  }
  std::vector<std::string> want_frames;
  for (const char* name : {"first", "first", "first", "", "", "", "second", "second", "second",
                           "second", "second", "second"}) {
    const std::string n = name;
    const std::string prog = n == "first"    ? "bpf_prog_aaaaaaaaaaaaaaaa_first"
                             : n == "second" ? "bpf_prog_bbbbbbbbbbbbbbbb_second"
                                             : "";
    want_frames.push_back(prog.empty() ? "[unknown]" : prog + "+0x24");
    want_frames.push_back(prog.empty() ? "[unknown]" : prog + "+0x40");
  }
  EXPECT_EQ(frames, want_frames);
  std::vector<std::string> syms;
  for (const std::string& line : script_lines_of(path)) {
    const size_t ip_at = line.find("ffffffffc0004024 ");
    ASSERT_NE(ip_at, std::string::npos) << line;
    const size_t sym_at = ip_at + 17;
    syms.push_back(line.substr(sym_at, line.find(' ', sym_at) - sym_at));
  }
  const std::string a = "bpf_prog_aaaaaaaaaaaaaaaa_first+0x24";
  const std::string b = "bpf_prog_bbbbbbbbbbbbbbbb_second+0x24";
  const std::vector<std::string> want = {a, a, a, "[unknown]", "[unknown]", "[unknown]",
                                         b, b, b, b, b, b};
  EXPECT_EQ(syms, want);
}

TEST(ScriptLines, WrittenToAPipeTheyAreTheSameAndThePipeIsWidened) {
  bpfprof::testing::TempDir dir;
  const std::string path = dir.file("piped.data");
  ASSERT_EQ(write_recording(path, Shape{}), "");
  auto s = Session::open(path, SessionOptions{});
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const int before = ::fcntl(fds[0], F_GETPIPE_SZ);
  std::string piped;
  std::thread reader([&] {
    char buf[65536];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) piped.append(buf, static_cast<size_t>(n));
  });
  std::FILE* out = ::fdopen(fds[1], "w");
  ASSERT_NE(out, nullptr);
  const Status written = script::write_script(**s, script::ScriptOptions{}, out);
  const int after = ::fcntl(fds[1], F_GETPIPE_SZ);
  std::fclose(out);
  reader.join();
  ::close(fds[0]);
  ASSERT_TRUE(written.ok()) << written.error().to_string();
  const std::string want = script_of(**s);
  EXPECT_GT(want.size(), 1u << 20);
  EXPECT_EQ(piped, want);
  EXPECT_LT(before, 1 << 20);
  // Root may always widen a pipe up to fs.pipe-max-size (1 MiB by default).
  if (::geteuid() == 0) {
    EXPECT_EQ(after, 1 << 20);
  }
}

TEST(SessionPass1, HalvesAtOnceGiveWhatOneWalkGives) {
  bpfprof::testing::TempDir dir;
  for (const bool by_rounds : {true, false}) {
    SCOPED_TRACE(by_rounds ? "samples keep the round contract" : "a sample breaks it");
    const std::string path = dir.file(by_rounds ? "rounds.data" : "broken.data");
    ASSERT_EQ(write_recording(path, Shape{by_rounds, false}), "");
    expect_same_sessions(path, 2);
    auto s = Session::open(path, SessionOptions{});
    ASSERT_TRUE(s.ok());
    EXPECT_EQ((*s)->sample_order().by_rounds, by_rounds);
  }
}

TEST(SessionPass1, GuessedBoundaryInsideARecordFallsBackToOneWalk) {
  bpfprof::testing::TempDir dir;
  const std::string path = dir.file("fake.data");
  ASSERT_EQ(write_recording(path, Shape{true, true}), "");
  expect_same_sessions(path, 1);
}

// Pass 2 over many chunks: however the chunks are split between threads (and
// re-split when a thread runs out), the report is the one a single thread
// makes.
// Three BPF programs, the third reusing the first one's address after it is
// unloaded; four processes; samples spread unevenly over 40 chunks.
std::string write_reuse_recording(const std::string& path) {
  auto w = perfdata::FileWriter::create(path, testing::two_attrs(kSampleType));
  if (!w.ok()) return w.error().to_string();
  auto side = [&](uint64_t time) {
    return TrailerValues{0, 0, time, testing::kDummyId, 0, 0};
  };
  using bpfprof::testing::comm_record;
  using bpfprof::testing::ksymbol_record;
  constexpr uint64_t kA = 0xffffffffc0001000, kB = 0xffffffffc0003000;
  std::vector<ByteVec> records = {
      ksymbol_record(kSampleType, kA, 0x200, perf::kKsymTypeBpf, 0, "bpf_prog_1111111111111111_a",
                     side(1)),
      ksymbol_record(kSampleType, kB, 0x200, perf::kKsymTypeBpf, 0, "bpf_prog_2222222222222222_b",
                     side(1)),
  };
  for (uint32_t pid = 1; pid <= 4; pid++) {
    records.push_back(comm_record(kSampleType, pid, pid, "proc" + std::to_string(pid), side(1)));
  }
  for (const ByteVec& r : records) {
    if (!w->append(r).ok()) return "append";
  }
  constexpr uint64_t kSamples = 40 * analysis::Session::kChunkSamples;
  uint64_t state = 7;
  for (uint64_t i = 0; i < kSamples; i++) {
    const uint64_t time = 100 + i;
    if (i == kSamples / 2) {
      // a goes, c takes its address.
      if (!w->append(ksymbol_record(kSampleType, kA, 0x200, perf::kKsymTypeBpf,
                                    perf::kKsymFlagUnregister, "bpf_prog_1111111111111111_a",
                                    side(time)))
               .ok() ||
          !w->append(ksymbol_record(kSampleType, kA, 0x100, perf::kKsymTypeBpf, 0,
                                    "bpf_prog_3333333333333333_c", side(time)))
               .ok()) {
        return "append";
      }
    }
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const uint64_t r = state >> 33;
    SampleValues s;
    s.id = testing::kSampleId;
    // Early samples spread over more distinct addresses (costlier chunks).
    const uint64_t spread = i < kSamples / 8 ? 0x1f0 : 0x20;
    s.ip = (r % 3 == 0 ? kB : kA) + (r >> 8) % spread;
    s.pid = s.tid = static_cast<uint32_t>(1 + (r >> 4) % 4);
    s.time = time;
    s.period = 1000 + r % 7;
    s.callchain = {perf::kContextKernel, s.ip, 0xffffffff81000000 + (r >> 12) % 64};
    if (!w->append(bpfprof::testing::sample_record(kSampleType, s, perf::kMiscKernel)).ok()) {
      return "append";
    }
    if (i % 1000 == 999 && !w->finish_round().ok()) return "round";
  }
  Status closed = w->close(perfdata::Features{});
  return closed.ok() ? "" : closed.error().to_string();
}

TEST(AggregateTest, AnySplitBetweenThreadsGivesTheSingleThreadReport) {
  bpfprof::testing::TempDir dir;
  const std::string path = dir.file("many_chunks.data");
  ASSERT_EQ(write_reuse_recording(path), "");
  auto session = Session::open(path, SessionOptions{});
  ASSERT_TRUE(session.ok()) << session.error().to_string();
  ASSERT_GE((*session)->chunk_count(), 40u);
  for (const bool stacks : {false, true}) {
    SCOPED_TRACE(stacks ? "-g" : "flat");
    AggregateOptions one;
    one.stacks = stacks;
    one.threads = 1;
    report::RenderOptions render;
    render.callgraph = stacks;
    auto both = [&](const ReportData& d) {
      return report::render_text(d, render) + report::render_json(d, render);
    };
    const std::string want = both(aggregate(**session, one));
    ASSERT_NE(want.find("bpf_prog_3333333333333333_c"), std::string::npos);
    for (const unsigned threads : {2u, 3u, 7u, 64u}) {
      AggregateOptions many = one;
      many.threads = threads;
      EXPECT_EQ(both(aggregate(**session, many)), want) << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace bpfprof::analysis
