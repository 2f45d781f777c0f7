// SPDX-License-Identifier: Apache-2.0
#include "report/render.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "report/program_groups.h"
#include "report/table.h"

namespace bpfprof::report {
namespace {

using profile::FrameKind;
using profile::SortKey;

// A hand-built report: one BPF program with two functions, a kernel caller,
// a user leaf; 10 samples.
class RenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    d_.header.host = "box";
    d_.header.kernel = "6.1.0";
    d_.header.arch = "x86_64";
    d_.header.events = {"cycles", "dummy:u"};
    d_.header.start_ns = 1'000'000'000;
    d_.header.end_ns = 1'500'000'000;
    d_.header.lost = 3;
    d_.header.throttled = 1;
    d_.programs.push_back(analysis::ProgramRow{42, "burn", "0011223344556677", 1'100'000'000,
                                               1'200'000'000, 6,
                                               {{"bpf_prog_0011223344556677_burn", 4},
                                                {"bpf_prog_0011223344556677_sub", 2}}});
    d_.programs.push_back(analysis::ProgramRow{7, "idle", "8899aabbccddeeff", 0, std::nullopt, 0,
                                               {{"bpf_prog_8899aabbccddeeff_idle", 0}}});
    auto& p = d_.profile;
    auto burn = p.add_frame({"bpf_prog_0011223344556677_burn", "[bpf]", "", FrameKind::kBpf, 1, 0});
    auto sub = p.add_frame({"bpf_prog_0011223344556677_sub", "[bpf]", "", FrameKind::kBpf, 1, 1});
    auto run = p.add_frame({"bpf_test_run", "[kernel.kallsyms]", "", FrameKind::kKernel});
    auto main = p.add_frame({"main", "/usr/bin/w", "", FrameKind::kUser});
    for (int i = 0; i < 4; i++) p.add_sample(p.add_stack({burn, run, main}), {5, 5, "w"}, 100, 1);
    for (int i = 0; i < 2; i++) p.add_sample(p.add_stack({sub, burn, run}), {5, 6, "w"}, 100, 1);
    for (int i = 0; i < 4; i++) p.add_sample(p.add_stack({main}), {5, 5, "w"}, 100, 1);
    p.diagnostics()[Diag::kSidebandOutOfOrder] = 2;
  }
  analysis::ReportData d_;
};

TEST(Table, AlignsColumnsWithoutTrailingBlanks) {
  Table t({{"N", Table::Align::kRight}, {"Name"}, {"Last"}});
  t.add_row({"1", "a", ""});
  t.add_row({"100", "long name", "x"});
  EXPECT_EQ(t.render(),
            "#   N  Name       Last\n"
            "    1  a\n"
            "  100  long name  x\n");
  EXPECT_EQ(percent(1, 3), "33.33%");
  EXPECT_EQ(percent(1, 0), "0.00%");
}

TEST_F(RenderTest, TextHasHeaderProgramsSymbolsAndDiagnostics) {
  std::string text = render_text(d_, {});
  EXPECT_NE(text.find("# host: box  kernel: 6.1.0  arch: x86_64\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# duration: 0.500000 s  samples: 10  lost: 3  throttled: 1\n"),
            std::string::npos) << text;
  // Program row: self, callees, dispatch, total, percent, instances, id,
  // tag, alive from/to relative to the start; no callchains here: self only.
  EXPECT_NE(text.find("# Self  Callees  Dispatch  Total  Percent  Inst  Ids  Tag               "
                      "First load  Last unload  Attach     Program / functions\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("     6        -         -      6   60.00%     1   42  0011223344556677  "
                      "+0.100000   +0.200000    [unknown]  burn\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("# callees and dispatch: not measured, the recording has no callchains"),
            std::string::npos) << text;
  EXPECT_NE(text.find("  bpf_prog_0011223344556677_sub\n"), std::string::npos) << text;
  EXPECT_NE(text.find("     1    7  8899aabbccddeeff  start       end          [unknown]  idle\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("# Overhead  Samples  Shared Object  Symbol\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("    40.00%        4  [bpf]          bpf_prog_0011223344556677_burn\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("\n# diagnostics: bpf_event_without_ksymbol=0 bpf_samples_unattributed=0 "),
            std::string::npos) << text;
  EXPECT_NE(text.find(" sideband_out_of_order=2 "), std::string::npos) << text;
}

// Each diagnostic as its rule says (diagnostics.h: listed): those listed
// always also at zero, the others only when they happened; in name order.
TEST_F(RenderTest, DiagnosticsListedByTheirRuleInNameOrder) {
  DiagCounts& counts = d_.profile.diagnostics();
  counts[Diag::kBpfLinksLost] = 4;  // listed when not 0
  std::string text = render_text(d_, {});
  EXPECT_NE(text.find(" records_unknown_type=0"), std::string::npos) << text;
  EXPECT_NE(text.find(" bpf_links_lost=4"), std::string::npos) << text;
  EXPECT_EQ(text.find("cgroup_unknown"), std::string::npos) << text;
  EXPECT_EQ(text.find("sample_chunks_unreadable"), std::string::npos) << text;
  // Parsed keeping the keys' order.
  auto j = nlohmann::ordered_json::parse(render_json(d_, {}));
  std::vector<std::string> keys, want;
  for (const auto& [key, value] : j["diagnostics"].items()) keys.push_back(key);
  for (const DiagInfo& d : kDiagnostics) {
    if (d.listed == DiagInfo::Listed::kAlways || d.diag == Diag::kBpfLinksLost) {
      want.emplace_back(d.name);
    }
  }
  std::sort(want.begin(), want.end());
  EXPECT_EQ(keys, want);
  EXPECT_EQ(j["diagnostics"]["bpf_links_lost"], 4);
  EXPECT_EQ(j["diagnostics"]["records_unknown_type"], 0);
  // The text footer lists the same names in the same order.
  size_t at = text.find("# diagnostics:");
  for (const std::string& name : want) {
    const size_t next = text.find(" " + name + "=", at);
    ASSERT_NE(next, std::string::npos) << name << " after offset " << at << " in " << text;
    at = next;
  }
}

TEST_F(RenderTest, TextCallersTreeAndBpfOnly) {
  RenderOptions o;
  o.callgraph = true;
  o.bpf_only = true;
  std::string text = render_text(d_, o);
  EXPECT_EQ(text.find("  main  /usr/bin/w"), std::string::npos) << text;
  EXPECT_NE(text.find("  100.00%  bpf_test_run ([kernel.kallsyms])\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  100.00%    main (/usr/bin/w)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  100.00%  bpf_prog_0011223344556677_burn ([bpf])\n"), std::string::npos)
      << text;
}

TEST_F(RenderTest, TextOtherSortKeys) {
  RenderOptions o;
  o.keys = {SortKey::kProg, SortKey::kComm};
  std::string text = render_text(d_, o);
  EXPECT_NE(text.find("# Samples by prog,comm\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    60.00%        6  burn       w\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    40.00%        4  [not bpf]  w\n"), std::string::npos) << text;
}

TEST_F(RenderTest, JsonSchema) {
  auto j = nlohmann::json::parse(render_json(d_, {}));
  EXPECT_EQ(j["samples"], 10);
  EXPECT_EQ(j["lost"], 3);
  EXPECT_EQ(j["throttled"], 1);
  EXPECT_EQ(j["duration_ns"], 500'000'000);
  ASSERT_EQ(j["programs"].size(), 2u);
  const auto& prog = j["programs"][0];
  EXPECT_EQ(prog["instances"], 1);
  EXPECT_EQ(prog["ids"], nlohmann::json::array({42}));
  EXPECT_FALSE(prog.contains("id"));
  EXPECT_EQ(prog["name"], "burn");
  EXPECT_TRUE(prog["kernel_name"].is_null());  // no stored info
  EXPECT_EQ(prog["metadata"], nlohmann::json::object());
  EXPECT_TRUE(prog["maps"].is_null());  // the recording does not say
  EXPECT_EQ(prog["tag"], "0011223344556677");
  EXPECT_EQ(prog["samples"], 6);
  EXPECT_DOUBLE_EQ(prog["percent"].get<double>(), 60.0);
  EXPECT_EQ(prog["load_ns"], 1'100'000'000);
  EXPECT_EQ(prog["unload_ns"], 1'200'000'000);
  EXPECT_EQ(prog["functions"][1]["name"], "bpf_prog_0011223344556677_sub");
  EXPECT_EQ(prog["functions"][1]["samples"], 2);
  EXPECT_TRUE(j["programs"][1]["unload_ns"].is_null());
  ASSERT_EQ(j["symbols"].size(), 3u);
  EXPECT_EQ(j["symbols"][0]["name"], "bpf_prog_0011223344556677_burn");
  EXPECT_EQ(j["symbols"][0]["dso"], "[bpf]");
  EXPECT_EQ(j["symbols"][0]["samples"], 4);
  EXPECT_DOUBLE_EQ(j["symbols"][0]["percent"].get<double>(), 40.0);
  EXPECT_EQ(j["diagnostics"]["sideband_out_of_order"], 2);
  EXPECT_FALSE(j.contains("entries"));
}

// Instances of the same code (name and tag) share a row: ids, samples (also
// per function) and run statistics summed, first load, last unload, owners
// merged, the largest sizes. `--instances` prints them as before, one each.
TEST_F(RenderTest, ProgramTableGroupsInstancesOfTheSameCode) {
  d_.enrichment = analysis::EnrichmentSummary{};
  d_.enrichment->bpf_stats = true;
  analysis::ProgramRow& first = d_.programs[0];
  first.owner = "loader[5]";
  first.owner_pids = {5};
  first.owner_tids = {7};
  first.run_cnt = 10;
  first.run_time_ns = 1000;
  first.jited_len = 100;
  first.maps = {
      {14, BPF_MAP_TYPE_HASH, 4, 8, 1024, BPF_F_NO_PREALLOC, "counts", 0xffff888100001000, 0}};
  analysis::ProgramRow again = first;
  again.id = 50;
  again.load_ns = 1'300'000'000;
  again.unload_ns = std::nullopt;  // still loaded: the group's last unload is the end
  again.samples = 3;
  again.functions = {{"bpf_prog_0011223344556677_burn", 1}, {"bpf_prog_0011223344556677_sub", 2}};
  again.owner = "other[3],loader[5]";
  again.owner_pids = {3, 5};
  again.owner_tids = {9, 7};
  again.run_cnt = 30;
  again.run_time_ns = 5000;
  again.jited_len = 120;
  // Only this instance has stored info and metadata: the group shows its.
  again.kernel_name = "burn";
  again.metadata = {{"version", "2", bpf::MetadataKind::kNumber}};
  // Its maps are its own (a map shared with the first instance is listed once).
  again.maps->push_back({15, BPF_MAP_TYPE_PERCPU_ARRAY, 4, 16, 1, 0, "burn.bss", 0, 0});
  d_.programs.push_back(again);
  // A zero tag tells no code apart: its row stays its own.
  d_.programs.push_back(
      analysis::ProgramRow{60, "anon", std::string(16, '0'), 0, std::nullopt, 0, {}});
  d_.programs.push_back(
      analysis::ProgramRow{61, "anon", std::string(16, '0'), 0, std::nullopt, 0, {}});

  const std::string text = render_text(d_, {});
  EXPECT_NE(text.find("     9        -         -      9   90.00%    40   0.006     150     2  "
                      "42,50  0011223344556677  +0.100000   end          [unknown]  burn\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("\n     5      "), std::string::npos) << text;  // burn: 4 + 1
  EXPECT_NE(text.find("\n     4      "), std::string::npos) << text;  // sub: 2 + 2
  EXPECT_NE(text.find("     1     60  0000000000000000"), std::string::npos) << text;
  EXPECT_NE(text.find("     1     61  0000000000000000"), std::string::npos) << text;

  const auto j = nlohmann::json::parse(render_json(d_, {}));
  ASSERT_EQ(j["programs"].size(), 4u);
  const auto& burn = j["programs"][0];
  EXPECT_EQ(burn["instances"], 2);
  EXPECT_EQ(burn["ids"], nlohmann::json::array({42, 50}));
  EXPECT_EQ(burn["samples"], 9);
  EXPECT_EQ(burn["load_ns"], 1'100'000'000);
  EXPECT_TRUE(burn["unload_ns"].is_null());
  EXPECT_EQ(burn["owner"], "loader[5],other[3]");
  EXPECT_EQ(burn["owner_pids"], nlohmann::json::array({3, 5}));
  EXPECT_EQ(burn["owner_tids"], nlohmann::json::array({7, 9}));
  EXPECT_EQ(burn["run_cnt"], 40);
  EXPECT_EQ(burn["run_time_ns"], 6000);
  EXPECT_EQ(burn["avg_ns"], 150);
  EXPECT_EQ(burn["jited_len"], 120);
  EXPECT_TRUE(burn["xlated_len"].is_null());
  EXPECT_EQ(burn["kernel_name"], "burn");
  EXPECT_EQ(burn["metadata"], (nlohmann::json{{"version", 2}}));
  EXPECT_EQ(burn["maps"], nlohmann::json::parse(R"([
    {"id": 14, "type": "hash", "name": "counts", "key_size": 4, "value_size": 8,
     "max_entries": 1024, "flags": 1},
    {"id": 15, "type": "percpu_array", "name": "burn.bss", "key_size": 4, "value_size": 16,
     "max_entries": 1, "flags": 0}])"));
  EXPECT_EQ(burn["functions"][0]["samples"], 5);
  EXPECT_EQ(burn["functions"][1]["samples"], 4);

  RenderOptions each;
  each.instances = true;
  const std::string one_by_one = render_text(d_, each);
  EXPECT_NE(one_by_one.find("  Id  Tag               Loaded     Unloaded   Attach     Program / functions\n"),
            std::string::npos) << one_by_one;
  EXPECT_NE(one_by_one.find("  42  0011223344556677  +0.100000  +0.200000  [unknown]  burn\n"),
            std::string::npos) << one_by_one;
  EXPECT_NE(one_by_one.find("  50  0011223344556677  +0.300000  end        [unknown]  burn\n"),
            std::string::npos) << one_by_one;
  const auto k = nlohmann::json::parse(render_json(d_, each));
  ASSERT_EQ(k["programs"].size(), 5u);
  EXPECT_EQ(k["programs"][0]["id"], 42);
  EXPECT_EQ(k["programs"][0]["owner"], "loader[5]");
  EXPECT_EQ(k["programs"][1]["id"], 50);
  EXPECT_EQ(k["programs"][1]["owner_pids"], nlohmann::json::array({3, 5}));
  EXPECT_EQ(k["programs"][1]["owner_tids"], nlohmann::json::array({9, 7}));
  EXPECT_FALSE(k["programs"][0].contains("ids"));
}

// Who pays is counted per instance: two instances of the same code (one
// row of the table) loaded by two agents charge each agent its own
// instance's samples — in the header line, the JSON `owners` and the sort
// key `owner` alike — while the row names both.
TEST_F(RenderTest, CostByOwnerChargesEachInstanceToItsOwner) {
  d_.programs[0].owner = "agent-a[10]";
  d_.programs[0].owner_pids = {10};
  analysis::ProgramRow again = d_.programs[0];
  again.id = 43;
  again.samples = 3;
  again.functions = {{"bpf_prog_0011223344556677_burn", 3}, {"bpf_prog_0011223344556677_sub", 0}};
  again.owner = "agent-b[20]";
  again.owner_pids = {20};
  d_.programs.push_back(again);  // programs[2]: frames name it as program 3
  auto& p = d_.profile;
  auto burn2 = p.add_frame({"bpf_prog_0011223344556677_burn", "[bpf]", "", FrameKind::kBpf, 3, 0});
  for (int i = 0; i < 3; i++) p.add_sample(p.add_stack({burn2}), {20, 20, "agent-b"}, 100, 1);

  const std::string text = render_text(d_, {});
  EXPECT_NE(text.find("# BPF cost by owner (total): agent-a[10] 46.15% (6), agent-b[20] 23.08% (3)\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("     9        -         -      9   69.23%     2  42-43  0011223344556677"),
            std::string::npos) << text;

  const auto j = nlohmann::json::parse(render_json(d_, {}));
  ASSERT_EQ(j["owners"].size(), 2u) << j["owners"];
  EXPECT_EQ(j["owners"][0]["owner"], "agent-a[10]");
  EXPECT_EQ(j["owners"][0]["samples"], 6);
  EXPECT_EQ(j["owners"][0]["programs"], 1);
  EXPECT_EQ(j["owners"][1]["owner"], "agent-b[20]");
  EXPECT_EQ(j["owners"][1]["samples"], 3);
  ASSERT_EQ(j["programs"].size(), 2u);
  EXPECT_EQ(j["programs"][0]["owner"], "agent-a[10],agent-b[20]");
  EXPECT_EQ(j["programs"][0]["samples"], 9);

  RenderOptions by_owner;
  by_owner.keys = {SortKey::kOwner};
  by_owner.bpf_only = true;
  const auto k = nlohmann::json::parse(render_json(d_, by_owner));
  std::map<std::string, uint64_t> entries;
  for (const auto& e : k["entries"]) entries[e["owner"]] += e["samples"].get<uint64_t>();
  EXPECT_EQ(entries, (std::map<std::string, uint64_t>{{"agent-a[10]", 6}, {"agent-b[20]", 3}}));
}

// The Ids cell: sorted, consecutive runs as ranges, long lists cut at a
// whole item with the count of ids left out; the JSON keeps every id.
TEST(IdList, RangesOnlyForConsecutiveIdsAndCutWhenLong) {
  using V = std::vector<uint32_t>;
  EXPECT_EQ(id_list(V{42}), "42");
  EXPECT_EQ(id_list(V{15, 12, 14}), "12,14-15");
  EXPECT_EQ(id_list(V{12, 20}), "12,20");
  EXPECT_EQ(id_list(V{3, 4, 5, 6, 9, 9, 11, 12}), "3-6,9,11-12");
  V many;
  for (uint32_t id = 100; id < 140; id += 2) many.push_back(id);  // 20 ids, none consecutive
  const std::string cut = id_list(many, 24);
  EXPECT_EQ(cut, "100,102,104,106,+16 more");
  EXPECT_LE(cut.size(), 24u);
  EXPECT_EQ(id_list(many, 0).size(), 20 * 4 - 1u);  // no limit: all of them
  // The first item is shown even when it alone is longer than the limit.
  EXPECT_EQ(id_list(V{1000000, 1000001, 7000000}, 8), "1000000-1000001,+1 more");
  EXPECT_EQ(id_list(V{1000000, 1000001}, 8), "1000000-1000001");
  // A list that fits is not cut, however close to the limit.
  EXPECT_EQ(id_list(V{1, 3, 5, 7, 9, 11, 13, 15, 17}, 21), "1,3,5,7,9,11,13,15,17");
  EXPECT_EQ(id_list(V{1, 3, 5, 7, 9, 11, 13, 15, 17}, 20), "1,3,5,7,9,11,+3 more");
}

// -v: the stored sizes and the verifier's count per row, "-" without info.
TEST_F(RenderTest, TextVerboseAddsSizesAndVerifiedInsns) {
  d_.programs[0].jited_len = 312;
  d_.programs[0].xlated_len = 480;
  d_.programs[0].verified_insns = 1234;
  EXPECT_EQ(render_text(d_, {}).find("JIT bytes"), std::string::npos);
  RenderOptions o;
  o.verbose = true;
  const std::string text = render_text(d_, o);
  EXPECT_NE(text.find("  Last unload  JIT bytes  Xlated bytes  Verified insns  Attach     Program / functions\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("  +0.200000          312           480            1234  [unknown]  burn\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("  end                  -             -               -  [unknown]  idle\n"),
            std::string::npos) << text;
  o.instances = true;
  EXPECT_NE(render_text(d_, o).find("  Unloaded   JIT bytes  Xlated bytes  Verified insns  Attach     Program"),
            std::string::npos) << render_text(d_, o);
}

TEST_F(RenderTest, MetadataTypedAsBpftoolTypesIt) {
  // bpftool -j: strings, numbers, booleans; its plain output quotes strings.
  d_.programs[0].metadata = {{"name", "probe one"},
                             {"digits", "3"},  // a string that reads like a number
                             {"kinds", "3", bpf::MetadataKind::kNumber},
                             {"negative", "-7", bpf::MetadataKind::kNumber},
                             {"big", "18446744073709551615", bpf::MetadataKind::kNumber},
                             {"on", "true", bpf::MetadataKind::kBool},
                             {"quote", "say \"hi\""},
                             {"perf", "\"1.2\"", bpf::MetadataKind::kPrinted}};
  const auto j = nlohmann::json::parse(render_json(d_, {}));
  const auto& m = j["programs"][0]["metadata"];
  EXPECT_EQ(m, nlohmann::json::parse(R"({"name": "probe one", "digits": "3", "kinds": 3,
      "negative": -7, "big": 18446744073709551615, "on": true, "quote": "say \"hi\"",
      "perf": "\"1.2\""})"))
      << m.dump();
  EXPECT_TRUE(m["kinds"].is_number_unsigned());
  EXPECT_TRUE(m["negative"].is_number_integer());
  EXPECT_TRUE(m["on"].is_boolean());
  EXPECT_TRUE(m["digits"].is_string());

  RenderOptions o;
  o.verbose = true;
  const std::string text = render_text(d_, o);
  for (const char* line :
       {"metadata: name = \"probe one\"\n", "metadata: digits = \"3\"\n", "metadata: kinds = 3\n",
        "metadata: negative = -7\n", "metadata: on = true\n",
        "metadata: quote = \"say \\\"hi\\\"\"\n", "metadata: perf = \"1.2\"\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
}

TEST_F(RenderTest, JsonEntriesForOtherKeysAndCallers) {
  RenderOptions o;
  o.keys = {SortKey::kPid, SortKey::kSym};
  o.callgraph = true;
  auto j = nlohmann::json::parse(render_json(d_, o));
  EXPECT_EQ(j["sort"], (nlohmann::json{"pid", "sym"}));
  ASSERT_EQ(j["entries"].size(), 3u);
  const auto& e = j["entries"][0];
  EXPECT_EQ(e["pid"], "5:w");
  EXPECT_EQ(e["sym"], "bpf_prog_0011223344556677_burn");
  EXPECT_EQ(e["dso"], "[bpf]");
  EXPECT_EQ(e["callers"][0]["name"], "bpf_test_run");
  EXPECT_EQ(e["callers"][0]["callers"][0]["name"], "main");
  EXPECT_FALSE(j["symbols"][0].contains("callers"));
}

// The kernel cuts comms at 15 bytes, possibly inside a UTF-8 character; such
// names must not abort the JSON output.
TEST_F(RenderTest, JsonReplacesInvalidUtf8InNames) {
  auto& p = d_.profile;
  const std::string cut = "aaaaaaaaaaaaaa\xc3";  // "...ü" cut after its first byte
  auto f = p.add_frame({"bad\xff", "/usr/bin/w", "", FrameKind::kUser});
  p.add_sample(p.add_stack({f}), {9, 9, cut}, 100, 1);
  RenderOptions o;
  o.keys = {SortKey::kComm, SortKey::kSym};
  std::string out;
  ASSERT_NO_THROW(out = render_json(d_, o));
  auto j = nlohmann::json::parse(out);
  bool comm_seen = false, sym_seen = false;
  for (const auto& e : j["entries"]) {
    if (e["comm"] == "aaaaaaaaaaaaaa\xef\xbf\xbd") comm_seen = true;
    if (e["sym"] == "bad\xef\xbf\xbd") sym_seen = true;
  }
  EXPECT_TRUE(comm_seen) << out;
  EXPECT_TRUE(sym_seen) << out;
}

}  // namespace
}  // namespace bpfprof::report
