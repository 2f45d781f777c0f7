// SPDX-License-Identifier: Apache-2.0
// Real kernel, real tools: the maps of BPF programs as a recording stores
// them, against what `bpftool prog show` and `bpftool map show` print on the
// same machine while the programs are alive. Two bpftrace one-liners: one
// loaded during the recording (captured at load by the in-kernel capture),
// one loaded before it (read by id at start). The report's `maps` must list
// each program's maps in the kernel's order with bpftool's type names,
// sizes, max entries and flags; annotate names the map each program's JIT
// code loads, whether the program was loaded during the recording or before.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "testing/paths.h"
#include "testing/subprocess.h"

namespace bpfprof::testing {
namespace {

using Json = nlohmann::json;

const std::string kBin = BPFPROF_BIN_DIR;
// Two maps of two types (percpu_hash for count(), hash for the assignment).
const std::string kScript =
    "tracepoint:raw_syscalls:sys_enter { @[comm] = count(); @last[tid] = nsecs; }";

Json report_json(const std::string& data) {
  RunResult rep = run({kBin + "/bpfprof", "report", "-q", "-i", data, "--format", "json",
                       "--instances"});
  EXPECT_EQ(rep.exit_code, 0) << rep.err;
  return rep.exit_code == 0 ? Json::parse(rep.out) : Json();
}

Json bpftool(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"bpftool", "-j"};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult r = run(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? Json::parse(r.out) : Json();
}


// The ids of the programs `pid` attached, once `bpftool perf` lists some
// (bpftrace attaches its tracepoint programs through perf events).
std::vector<uint32_t> programs_of(pid_t pid) {
  for (int i = 0; i < 200 && ::kill(pid, 0) == 0; i++) {
    RunResult r = run({"bpftool", "-j", "perf"});
    if (r.exit_code == 0 && !r.out.empty()) {
      std::vector<uint32_t> ids;
      for (const auto& e : Json::parse(r.out)) {
        if (e["pid"] == pid) ids.push_back(e["prog_id"].get<uint32_t>());
      }
      if (!ids.empty()) return ids;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return {};
}

// What bpftool prints for `progs` and their maps, now.
struct Listed {
  std::map<uint32_t, std::vector<uint32_t>> map_ids;  // program -> map_ids
  std::map<uint32_t, Json> maps;                      // id -> bpftool map show
};

Listed bpftool_listing(const std::vector<uint32_t>& progs) {
  Listed out;
  for (uint32_t id : progs) {
    const Json p = bpftool({"prog", "show", "id", std::to_string(id)});
    std::vector<uint32_t>& ids = out.map_ids[id];
    if (p.contains("map_ids")) ids = p["map_ids"].get<std::vector<uint32_t>>();
    for (uint32_t m : ids) out.maps[m] = bpftool({"map", "show", "id", std::to_string(m)});
  }
  return out;
}

// Each listed program's report row has exactly bpftool's maps; returns the
// rows' load_ns by program.
std::map<uint32_t, uint64_t> expect_maps_as_bpftool(const Json& report, const Listed& listed) {
  std::map<uint32_t, uint64_t> load_ns;
  size_t compared = 0;
  for (const auto& [prog, ids] : listed.map_ids) {
    const Json* row = nullptr;
    for (const auto& p : report["programs"]) {
      if (p["id"] == prog) row = &p;
    }
    if (row == nullptr) {
      ADD_FAILURE() << "program " << prog << " is not in the report";
      continue;
    }
    load_ns[prog] = (*row)["load_ns"].get<uint64_t>();
    const Json& maps = (*row)["maps"];
    if (!maps.is_array() || maps.size() != ids.size()) {
      ADD_FAILURE() << "program " << prog << ": bpftool lists maps " << Json(ids).dump()
                    << ", the report " << row->dump(1);
      continue;
    }
    std::cout << "program " << prog << " " << (*row)["name"] << " maps " << maps.dump() << "\n";
    for (size_t i = 0; i < ids.size(); i++) {
      const Json& got = maps[i];
      const Json& want = listed.maps.at(ids[i]);
      SCOPED_TRACE("program " + std::to_string(prog) + ", bpftool map " + want.dump());
      EXPECT_EQ(got["id"], ids[i]);
      EXPECT_EQ(got["id"], want["id"]);
      EXPECT_EQ(got["type"], want["type"]);
      EXPECT_EQ(got["name"], want.value("name", ""));
      EXPECT_EQ(got["key_size"], want["bytes_key"]);
      EXPECT_EQ(got["value_size"], want["bytes_value"]);
      EXPECT_EQ(got["max_entries"], want["max_entries"]);
      EXPECT_EQ(got["flags"], want["flags"]);
      compared++;
    }
  }
  EXPECT_GE(compared, 2u) << "bpftrace's programs use fewer maps than the script asks";
  return load_ns;
}

// `bpfprof annotate` of each listed program names every one of its maps at
// a movabs of its code, as bpftool names them.
void expect_annotate_names_maps(const std::string& data, const Listed& listed) {
  for (const auto& [prog, ids] : listed.map_ids) {
    RunResult a =
        run({kBin + "/bpfprof", "annotate", "-i", data, std::to_string(prog), "--format", "json"});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    std::map<std::string, int> named;
    const Json listing = Json::parse(a.out);
    for (const auto& f : listing["programs"][0]["functions"]) {
      for (const auto& l : f["lines"]) {
        for (const auto& i : l["insns"]) {
          if (i["target"].is_string() && i["target"].get<std::string>().starts_with("map[")) {
            EXPECT_TRUE(i["asm"].get<std::string>().starts_with("movabs")) << i.dump();
            named[i["target"].get<std::string>()]++;
          }
        }
      }
    }
    for (uint32_t m : ids) {
      const std::string want =
          "map[id:" + std::to_string(m) + " " + listed.maps.at(m).value("name", "") + "]";
      EXPECT_GT(named[want], 0) << "program " << prog << " never names " << want << "\n"
                                << a.out.substr(0, 4000);
    }
  }
}

class MapsKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (run({"bpftrace", "--version"}).exit_code != 0) {
      BPFPROF_KERNEL_SKIP("bpftrace is not installed (scripts/install-deps.sh installs it)");
    }
    if (run({"bpftool", "version"}).exit_code != 0) BPFPROF_KERNEL_SKIP("bpftool is not installed");
    if (std::string why = bpf_refusal(kBin); !why.empty()) BPFPROF_KERNEL_SKIP(why);
    if (std::string why = mount_tracefs(); !why.empty()) BPFPROF_KERNEL_SKIP("no tracefs: " + why);
  }
};

TEST_F(MapsKernelTest, MapsOfProgramsLoadedWhileRecordingAreBpftools) {
  TempDir dir;
  const std::string data = dir.file("load.data");
  Background rec({kBin + "/bpfprof", "record", "-q", "-a", "-F", "99", "-o", data, "--",
                  "timeout", "-s", "INT", "5", "bpftrace", "-q", "-e", kScript});
  const pid_t timeout_pid = child_named(rec.pid(), "timeout");
  ASSERT_NE(timeout_pid, 0) << "timeout did not start under bpfprof record";
  const pid_t bpftrace = child_named(timeout_pid, "bpftrace");
  ASSERT_NE(bpftrace, 0) << "bpftrace did not start";
  const std::vector<uint32_t> progs = programs_of(bpftrace);
  const Listed listed = bpftool_listing(progs);  // while bpftrace holds them
  ASSERT_EQ(rec.stop(0), 0);
  ASSERT_FALSE(progs.empty()) << "bpftool perf listed nothing of bpftrace[" << bpftrace << "]";
  const Json report = report_json(data);
  ASSERT_TRUE(report.contains("programs"));
  std::cout << "enrichment: " << report["enrichment"].dump() << "\n";
  for (const auto& [prog, load] : expect_maps_as_bpftool(report, listed)) {
    EXPECT_GT(load, 0u) << "program " << prog << " was loaded during the recording";
  }

  // The capture stored where the maps are: annotate names each map load.
  expect_annotate_names_maps(data, listed);
}

TEST_F(MapsKernelTest, MapsOfProgramsThereAtStartAreBpftools) {
  Background bt({"timeout", "-s", "INT", "20", "bpftrace", "-q", "-e", kScript});
  const pid_t bpftrace = child_named(bt.pid(), "bpftrace");
  ASSERT_NE(bpftrace, 0) << "bpftrace did not start";
  const std::vector<uint32_t> progs = programs_of(bpftrace);
  ASSERT_FALSE(progs.empty()) << "bpftool perf listed nothing of bpftrace[" << bpftrace << "]";
  const Listed before = bpftool_listing(progs);
  TempDir dir;
  const std::string data = dir.file("start.data");
  RunResult rec = run({kBin + "/bpfprof", "record", "-q", "-a", "-F", "99", "-o", data, "--",
                       "sleep", "0.5"});
  const Listed after = bpftool_listing(progs);
  bt.stop(SIGINT);
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  ASSERT_EQ(before.map_ids, after.map_ids) << "bpftrace's programs changed during the test";
  const Json report = report_json(data);
  ASSERT_TRUE(report.contains("programs"));
  for (const auto& [prog, load] : expect_maps_as_bpftool(report, after)) {
    EXPECT_EQ(load, 0u) << "program " << prog << " was there before the recording";
  }
  // Where the maps are was read from the programs' code at start: annotate
  // names each map load as it does for a program loaded while recording.
  expect_annotate_names_maps(data, after);
}

// The workload's attached programs read their .rodata by direct value access
// (a 64-bit load of an address in the array's values, not of the map): at
// start, that address is read from their code too.
TEST_F(MapsKernelTest, MapValuesOfProgramsThereAtStartAreNamed) {
  Background workload({kBin + "/bpfprof-workload", "--attached", "--attached-for", "20s"});
  ASSERT_EQ(workload.wait_for_line("ready"), "ready");
  const std::vector<uint32_t> progs = programs_of(workload.pid());
  ASSERT_FALSE(progs.empty()) << "bpftool perf listed nothing of the workload";
  const Listed listed = bpftool_listing(progs);
  TempDir dir;
  const std::string data = dir.file("values.data");
  RunResult rec =
      run({kBin + "/bpfprof", "record", "-a", "-F", "99", "-o", data, "--", "sleep", "0.5"});
  workload.stop(SIGTERM);
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  EXPECT_EQ(rec.err.find("not paired"), std::string::npos) << rec.err;
  for (const auto& [prog, ids] : listed.map_ids) {
    ASSERT_FALSE(ids.empty()) << "program " << prog << " uses no map";
    for (uint32_t m : ids) {
      EXPECT_EQ(listed.maps.at(m)["type"], "array") << listed.maps.at(m).dump();
    }
  }
  expect_annotate_names_maps(data, listed);
}

}  // namespace
}  // namespace bpfprof::testing
