// SPDX-License-Identifier: Apache-2.0
// pprof of hand-built profiles, decoded back with the generated classes.
#include "export/pprof.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "export/gzip.h"
#include "proto/profile.pb.h"
#include "testing/sample_report.h"

namespace bpfprof::exporter {
namespace {

namespace pb = perftools::profiles;
using profile::FrameKind;

using bpfprof::testing::kBurnAddr;
using bpfprof::testing::kSubAddr;
using bpfprof::testing::make_report;

pb::Profile decode(const Result<std::string>& gz) {
  EXPECT_TRUE(gz.ok()) << gz.error().to_string();
  pb::Profile out;
  if (!gz.ok()) return out;
  // gzip magic: pprof readers sniff it.
  EXPECT_EQ(gz->substr(0, 2), "\x1f\x8b");
  auto raw = gzip_decompress(*gz);
  EXPECT_TRUE(raw.ok());
  EXPECT_TRUE(out.ParseFromString(*raw));
  return out;
}

// Readable views of a decoded profile.
struct View {
  const pb::Profile& p;
  const std::string& s(int64_t i) const { return p.string_table(static_cast<int>(i)); }
  const pb::Location& loc(uint64_t id) const { return p.location(static_cast<int>(id - 1)); }
  const pb::Mapping& map(uint64_t id) const { return p.mapping(static_cast<int>(id - 1)); }
  const pb::Function& fn(uint64_t id) const { return p.function(static_cast<int>(id - 1)); }
  std::string fn_name(uint64_t loc_id) const {
    return s(fn(loc(loc_id).line(0).function_id()).name());
  }
  std::string leaf(const pb::Sample& x) const { return fn_name(x.location_id(0)); }
  std::map<std::string, std::string> labels(const pb::Sample& x) const {
    std::map<std::string, std::string> out;
    for (const pb::Label& l : x.label()) {
      out[s(l.key())] = l.str() != 0 ? s(l.str()) : "#" + std::to_string(l.num());
    }
    return out;
  }
  // Samples per leaf function name.
  std::map<std::string, int64_t> flat() const {
    std::map<std::string, int64_t> out;
    for (const pb::Sample& x : p.sample()) out[leaf(x)] += x.value(0);
    return out;
  }
};

TEST(Pprof, StringTableSampleTypesAndTotals) {
  pb::Profile p = decode(render_pprof(make_report(42, "box")));
  View v{p};
  ASSERT_GT(p.string_table_size(), 0);
  EXPECT_EQ(p.string_table(0), "");
  ASSERT_EQ(p.sample_type_size(), 2);
  EXPECT_EQ(v.s(p.sample_type(0).type()), "samples");
  EXPECT_EQ(v.s(p.sample_type(0).unit()), "count");
  EXPECT_EQ(v.s(p.sample_type(1).type()), "cpu");
  EXPECT_EQ(v.s(p.sample_type(1).unit()), "nanoseconds");
  EXPECT_EQ(v.s(p.period_type().type()), "cpu");
  EXPECT_EQ(p.period(), 100);
  EXPECT_EQ(p.duration_nanos(), 500'000'000);
  int64_t samples = 0, period = 0;
  for (const pb::Sample& x : p.sample()) {
    ASSERT_EQ(x.value_size(), 2);
    samples += x.value(0);
    period += x.value(1);
  }
  EXPECT_EQ(samples, 11);
  EXPECT_EQ(period, 1100);
  std::map<std::string, int64_t> want{{"bpf_prog_0011223344556677_burn", 4},
                                      {"bpf_prog_0011223344556677_sub", 2},
                                      {"main", 4},
                                      {"[unknown]", 1}};
  EXPECT_EQ(v.flat(), want);
  ASSERT_EQ(p.comment_size(), 1);
  EXPECT_NE(v.s(p.comment(0)).find("host box kernel 6.1.0"), std::string::npos);
}

TEST(Pprof, CyclesAreCountedNotTime) {
  analysis::ReportData d = make_report(42, "box");
  d.header.events = {"cycles", "dummy:u"};
  pb::Profile p = decode(render_pprof(d));
  View v{p};
  EXPECT_EQ(v.s(p.sample_type(1).type()), "cycles");
  EXPECT_EQ(v.s(p.sample_type(1).unit()), "count");
}

TEST(Pprof, LocationsFunctionsAndMappings) {
  pb::Profile p = decode(render_pprof(make_report(42, "box")));
  View v{p};
  std::map<std::string, const pb::Mapping*> maps;
  for (int i = 0; i < p.mapping_size(); i++) {
    const pb::Mapping& m = p.mapping(i);
    EXPECT_EQ(m.id(), static_cast<uint64_t>(i) + 1);  // ids are positions + 1
    EXPECT_TRUE(m.has_functions());
    maps[v.s(m.filename())] = &m;
  }
  ASSERT_EQ(maps.size(), 4u);  // [bpf] burn, kernel, /usr/bin/w, [unknown]
  ASSERT_TRUE(maps.count("[bpf] burn"));
  const pb::Mapping& bpf = *maps["[bpf] burn"];
  EXPECT_EQ(bpf.memory_start(), kBurnAddr);
  EXPECT_EQ(bpf.memory_limit(), kSubAddr + 0x80);
  EXPECT_EQ(v.s(bpf.build_id()), "0011223344556677");
  EXPECT_TRUE(bpf.has_line_numbers());
  EXPECT_TRUE(maps.count("[kernel.kallsyms]"));
  EXPECT_TRUE(maps.count("/usr/bin/w"));

  std::set<std::string> functions;
  for (const pb::Function& f : p.function()) {
    EXPECT_EQ(v.s(f.name()), v.s(f.system_name()));
    functions.insert(v.s(f.name()));
  }
  EXPECT_EQ(functions, (std::set<std::string>{"bpf_prog_0011223344556677_burn",
                                               "bpf_prog_0011223344556677_sub", "bpf_test_run",
                                               "main", "[unknown]"}));
  ASSERT_EQ(p.location_size(), 5);
  for (const pb::Location& l : p.location()) {
    ASSERT_EQ(l.line_size(), 1);
    const std::string name = v.fn_name(l.id());
    const std::string file = v.s(v.map(l.mapping_id()).filename());
    if (name == "bpf_prog_0011223344556677_burn") {
      EXPECT_EQ(file, "[bpf] burn");
      EXPECT_EQ(l.address(), kBurnAddr);
      EXPECT_EQ(l.line(0).line(), 12);
      EXPECT_EQ(v.s(v.fn(l.line(0).function_id()).filename()), "burn.bpf.c");
    } else if (name == "bpf_prog_0011223344556677_sub") {
      EXPECT_EQ(l.address(), kSubAddr);
    } else if (name == "bpf_test_run") {
      EXPECT_EQ(file, "[kernel.kallsyms]");
    } else if (name == "main") {
      EXPECT_EQ(file, "/usr/bin/w");
    }
  }
  // Stacks are leaf first.
  for (const pb::Sample& x : p.sample()) {
    if (v.leaf(x) != "bpf_prog_0011223344556677_sub") continue;
    ASSERT_EQ(x.location_id_size(), 3);
    EXPECT_EQ(v.fn_name(x.location_id(1)), "bpf_prog_0011223344556677_burn");
    EXPECT_EQ(v.fn_name(x.location_id(2)), "bpf_test_run");
  }
}

TEST(Pprof, BpfLeafSamplesCarryProgramLabels) {
  pb::Profile p = decode(render_pprof(make_report(42, "box")));
  View v{p};
  for (const pb::Sample& x : p.sample()) {
    auto labels = v.labels(x);
    const bool bpf = v.leaf(x).starts_with("bpf_prog_");
    EXPECT_EQ(labels.count("bpf_prog_id"), bpf ? 1u : 0u) << v.leaf(x);
    if (bpf) {
      EXPECT_EQ(labels["bpf_prog_id"], "42");
      EXPECT_EQ(labels["bpf_prog_tag"], "0011223344556677");
      EXPECT_EQ(labels["bpf_prog"], "burn");
      EXPECT_EQ(labels["owner"], "[unknown]");  // the report made here names none
    }
    EXPECT_TRUE(labels.count("comm"));
    EXPECT_TRUE(labels.count("pid"));
    EXPECT_FALSE(labels.count("host"));  // one recording: no host label
  }
}

// Who owns a BPF leaf's program, in which cgroup, and where it is attached
// are labels of the sample (as report's `owner`, `owner_cgroup` and
// `attach` name them); samples
// whose leaf is not BPF code carry neither.
TEST(Pprof, BpfLeafSamplesCarryOwnerAndAttachLabels) {
  analysis::ReportData d = make_report(42, "");
  d.programs[0].owner = "agent[7]";
  d.programs[0].owner_cgroup = "/agents/a";
  d.programs[0].attach = "tracepoint/sched/sched_switch, xdp/eth0";
  pb::Profile p = decode(render_pprof(d));
  View v{p};
  int64_t bpf = 0, other = 0;
  for (const pb::Sample& x : p.sample()) {
    auto labels = v.labels(x);
    if (v.leaf(x).starts_with("bpf_prog_")) {
      EXPECT_EQ(labels["owner"], "agent[7]");
      EXPECT_EQ(labels["owner_cgroup"], "/agents/a");
      EXPECT_EQ(labels["attach"], "tracepoint/sched/sched_switch, xdp/eth0");
      bpf += x.value(0);
    } else {
      EXPECT_EQ(labels.count("owner"), 0u) << v.leaf(x);
      EXPECT_EQ(labels.count("owner_cgroup"), 0u) << v.leaf(x);
      EXPECT_EQ(labels.count("attach"), 0u) << v.leaf(x);
      other += x.value(0);
    }
  }
  EXPECT_EQ(bpf, 6);
  EXPECT_EQ(other, 5);
}

// A sample's cgroup (record --cgroup) is its `cgroup` label; a sample
// without one ([unknown]) and a report that did not ask (empty) get none.
TEST(Pprof, SamplesInACgroupCarryItsLabel) {
  analysis::ReportData d = make_report(42, "");
  auto& p = d.profile;
  auto main = p.add_frame({"main", "/usr/bin/w", "", FrameKind::kUser});
  for (int i = 0; i < 3; i++) {
    p.add_sample(p.add_stack({main}), {7, 7, "w", "/system.slice/docker-ab.scope"}, 100, 1);
  }
  for (int i = 0; i < 2; i++) p.add_sample(p.add_stack({main}), {8, 8, "w", "[unknown]"}, 100, 1);
  pb::Profile out = decode(render_pprof(d));
  View v{out};
  std::map<std::string, int64_t> by_cgroup;
  for (const pb::Sample& x : out.sample()) {
    auto labels = v.labels(x);
    by_cgroup[labels.count("cgroup") ? labels["cgroup"] : "(none)"] += x.value(0);
    if (labels.count("cgroup")) {
      EXPECT_EQ(labels["pid"], "#7");
    }
  }
  EXPECT_EQ(by_cgroup["/system.slice/docker-ab.scope"], 3);
  EXPECT_EQ(by_cgroup["(none)"], 11 + 2);
  EXPECT_EQ(by_cgroup.size(), 2u);
}

TEST(Pprof, BpfOnlyKeepsBpfLeaves) {
  pb::Profile p = decode(render_pprof(make_report(42, "box"), true));
  View v{p};
  std::map<std::string, int64_t> want{{"bpf_prog_0011223344556677_burn", 4},
                                      {"bpf_prog_0011223344556677_sub", 2}};
  EXPECT_EQ(v.flat(), want);
}

// Two hosts ran the same program (same tag and name) under different ids.
// Pass 2's workers meet frames and samples in a different order on each
// run: the file's bytes must not depend on it.
TEST(Pprof, BytesDoNotDependOnTheOrderFramesAndSamplesWereMet) {
  const analysis::ReportData base = make_report(42, "box");
  const profile::Profile& from = base.profile;
  std::vector<std::pair<profile::SampleKey, profile::Counts>> samples(from.samples().begin(),
                                                                      from.samples().end());
  ASSERT_GT(from.frame_count(), 2u);
  ASSERT_GT(samples.size(), 1u);
  auto rebuilt = [&](bool reversed) {
    analysis::ReportData d = make_report(42, "box");
    d.profile = profile::Profile{};
    std::vector<profile::FrameId> ids(from.frame_count());
    for (size_t k = 0; k < ids.size(); k++) {
      const size_t i = reversed ? ids.size() - 1 - k : k;
      ids[i] = d.profile.add_frame(from.frame(static_cast<profile::FrameId>(i)));
    }
    for (size_t k = 0; k < samples.size(); k++) {
      const auto& [key, counts] = samples[reversed ? samples.size() - 1 - k : k];
      std::vector<profile::FrameId> stack;
      for (profile::FrameId f : from.stack(key.stack)) stack.push_back(ids[f]);
      profile::Counts& slot = d.profile.slot(d.profile.add_stack(stack), key.thread);
      slot += counts;
    }
    return render_pprof(d);
  };
  const Result<std::string> forward = rebuilt(false), backward = rebuilt(true);
  ASSERT_TRUE(forward.ok() && backward.ok());
  EXPECT_EQ(*forward, *backward);
  // The same profile, not an empty one: every sample is there.
  EXPECT_EQ(decode(forward).sample_size(), decode(render_pprof(base)).sample_size());
}

TEST(PprofMerge, SameTagAndNameIsOneProgram) {
  analysis::ReportData a = make_report(42, "host1"), b = make_report(97, "host2");
  PprofBuilder merged(BpfIdentity::kTagName);
  merged.add(a, "host1");
  merged.add(b, "host2");
  pb::Profile p = decode(merged.encode());
  View v{p};
  int bpf_maps = 0;
  for (const pb::Mapping& m : p.mapping()) {
    if (v.s(m.filename()).starts_with("[bpf]")) {
      bpf_maps++;
      EXPECT_EQ(m.memory_start(), 0u);  // host addresses mean nothing together
    }
  }
  EXPECT_EQ(bpf_maps, 1);
  int burn_functions = 0;
  for (const pb::Function& f : p.function()) {
    burn_functions += v.s(f.name()) == "bpf_prog_0011223344556677_burn";
  }
  EXPECT_EQ(burn_functions, 1);
  EXPECT_EQ(v.flat()["bpf_prog_0011223344556677_burn"], 8);
  std::set<std::string> hosts;
  for (const pb::Sample& x : p.sample()) {
    auto labels = v.labels(x);
    EXPECT_FALSE(labels.count("bpf_prog_id"));
    hosts.insert(labels["host"]);
  }
  EXPECT_EQ(hosts, (std::set<std::string>{"host1", "host2"}));
  EXPECT_EQ(p.comment_size(), 2);

  // Per instance (one recording's view), the two loads stay apart.
  PprofBuilder apart(BpfIdentity::kInstance);
  apart.add(a);
  apart.add(b);
  pb::Profile q = decode(apart.encode());
  View w{q};
  bpf_maps = 0;
  for (const pb::Mapping& m : q.mapping()) bpf_maps += w.s(m.filename()).starts_with("[bpf]");
  EXPECT_EQ(bpf_maps, 2);
}

TEST(PprofMerge, DifferentTagIsAnotherProgram) {
  analysis::ReportData a = make_report(42, "h"), b = make_report(42, "h");
  b.programs[0].tag = "8899aabbccddeeff";
  PprofBuilder merged(BpfIdentity::kTagName);
  merged.add(a);
  merged.add(b);
  pb::Profile p = decode(merged.encode());
  View v{p};
  int bpf_maps = 0;
  for (const pb::Mapping& m : p.mapping()) bpf_maps += v.s(m.filename()).starts_with("[bpf]");
  EXPECT_EQ(bpf_maps, 2);
}

TEST(Gzip, RoundTripAndTruncation) {
  std::string data(100000, 'x');
  for (size_t i = 0; i < data.size(); i += 7) data[i] = static_cast<char>(i);
  auto gz = gzip_compress(data);
  ASSERT_TRUE(gz.ok());
  auto back = gzip_decompress(*gz);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, data);
  auto cut = gzip_decompress(gz->substr(0, gz->size() / 2));
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().code, Errc::kTruncated);
  EXPECT_FALSE(gzip_decompress("not gzip at all").ok());
}

}  // namespace
}  // namespace bpfprof::exporter
