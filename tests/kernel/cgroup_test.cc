// SPDX-License-Identifier: Apache-2.0
// Real kernel: `record --cgroup` while two processes burn CPU in two cgroups
// the test creates — one before recording (synthesized at start), one during
// it (a live CGROUP record). The file must name both cgroups with their ids,
// give each process's samples its cgroup, report them by `--sort cgroup`,
// label each pprof sample with it, and Linux perf must read it (`perf report
// --sort cgroup`, `perf script`; perf 6.1's script has no cgroup field).
// Ground truth (pids, cgroup ids) is what the workload script writes.
// `script --format json` names the cgroup (and owner, attach) of BPF leaves.
// Without --cgroup, the loader's cgroup of every program is named.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

#include "export/gzip.h"
#include "perf/records.h"
#include "perfdata/reader.h"
#include "proto/profile.pb.h"
#include "testing/cgroup2.h"
#include "testing/paths.h"
#include "testing/subprocess.h"

namespace bpfprof::testing {
namespace {

const std::string kBin = BPFPROF_BIN_DIR;

std::string read_word(const std::string& path) {
  std::ifstream in(path);
  std::string w;
  in >> w;
  return w;
}

// Removes the test's cgroups however the test ends (empty ones only: the
// processes in them have exited when the recording ends).
struct CgroupDirs {
  std::vector<std::string> dirs;
  ~CgroupDirs() {
    for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) ::rmdir(it->c_str());
  }
};

// Cgroups `<name>-a`, made now, and `<name>-b`, left for the recording's
// script to make; both removed however the test ends. id_a is a's id (a
// cgroup v2 directory's inode is its id); 0 when a could not be made.
struct TwoCgroups {
  std::string a, b;
  uint64_t id_a = 0;
  CgroupDirs cleanup;
  TwoCgroups(const std::string& mount, const std::string& name)
      : a(mount + "/" + name + "-a"), b(mount + "/" + name + "-b") {
    cleanup.dirs = {a, b};
    struct stat st{};
    if (::mkdir(a.c_str(), 0755) == 0 && ::stat(a.c_str(), &st) == 0) id_a = st.st_ino;
  }
};

TEST(CgroupKernelTest, RecordsWhichCgroupPaidAndPerfReadsIt) {
  const std::string mount = cgroup2_mount();
  if (mount.empty()) BPFPROF_KERNEL_SKIP("no cgroup v2 hierarchy mounted");
  if (::geteuid() != 0) BPFPROF_KERNEL_SKIP("creating cgroups needs root");
  TempDir dir;
  const std::string name = "bpfprof-test-" + std::to_string(::getpid());
  TwoCgroups cgroups(mount, name);
  ASSERT_NE(cgroups.id_a, 0u) << cgroups.a;
  const std::string &a = cgroups.a, &b = cgroups.b;
  const uint64_t id_a = cgroups.id_a;

  // Each burner moves itself into its cgroup, writes its pid, then spins in
  // the shell (no child processes: every sample of it has its pid).
  const std::string burn = "echo $$ > \"$1/cgroup.procs\" && echo $$ > \"$2\" && i=0; "
                           "while [ $i -lt 400000 ]; do i=$((i+1)); done";
  const std::string script =
      // b exists before either burner starts (`;`, not `&&`: `&` would
      // put the mkdir in the background with the first burner).
      "mkdir '" + b + "' && stat -c %i '" + b + "' > '" + dir.file("b.id") + "' || exit 1; " +
      "sh -c '" + burn + "' burner '" + a + "' '" + dir.file("a.pid") + "' & " +
      "sh -c '" + burn + "' burner '" + b + "' '" + dir.file("b.pid") + "' & wait";
  const std::string data = dir.file("cg.data");
  RunResult rec = run({kBin + "/bpfprof", "record", "-a", "--cgroup", "-F", "999", "-q", "-o",
                       data, "--", "sh", "-c", script});
  if (rec.exit_code == 2 && rec.err.find("ermission") != std::string::npos) {
    BPFPROF_KERNEL_SKIP("recording refused: " + rec.err);
  }
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  const uint32_t pid_a = static_cast<uint32_t>(std::stoul(read_word(dir.file("a.pid"))));
  const uint32_t pid_b = static_cast<uint32_t>(std::stoul(read_word(dir.file("b.pid"))));
  const uint64_t id_b = std::stoull(read_word(dir.file("b.id")));
  ASSERT_NE(id_a, id_b);

  // The records: attrs ask for cgroups, both cgroups named with their ids
  // (a synthesized at time 0, b live), each burner's samples in its cgroup.
  auto reader = perfdata::FileReader::open(data);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  ASSERT_EQ(reader->attrs().size(), 2u);
  EXPECT_TRUE(reader->attrs()[0].attr.sample_type & PERF_SAMPLE_CGROUP);
  EXPECT_TRUE(reader->attrs()[1].attr.cgroup);
  std::map<uint64_t, std::string> paths;
  std::map<uint64_t, uint64_t> named_at;
  std::map<uint32_t, std::map<uint64_t, size_t>> samples;  // pid -> cgroup -> count
  ASSERT_TRUE(reader
                  ->for_each_record([&](const perf::RecordView& r, uint64_t) {
                    const perfdata::FileAttr* attr = reader->attr_for(r);
                    ASSERT_NE(attr, nullptr);
                    if (r.header.type == perf::kRecordCgroup) {
                      auto c = perf::Cgroup::parse(r, attr->layout);
                      ASSERT_TRUE(c.ok()) << c.error().to_string();
                      paths[c->id] = std::string(c->path);
                      named_at.emplace(c->id, c->sample_id.time);
                    } else if (r.header.type == perf::kRecordSample) {
                      auto s = perf::Sample::parse(r, attr->layout);
                      ASSERT_TRUE(s.ok()) << s.error().to_string();
                      samples[s->pid][s->cgroup]++;
                    }
                  })
                  .ok());
  EXPECT_EQ(paths[id_a], "/" + name + "-a");
  EXPECT_EQ(paths[id_b], "/" + name + "-b");
  EXPECT_EQ(named_at[id_a], 0u) << "a existed before recording: synthesized";
  EXPECT_NE(named_at[id_b], 0u) << "b was made during the recording: a live record";
  EXPECT_EQ(paths[1], "/") << "the root cgroup";
  EXPECT_GT(samples[pid_a][id_a], 0u);
  EXPECT_GT(samples[pid_b][id_b], 0u);
  EXPECT_EQ(samples[pid_a].count(id_b), 0u);
  EXPECT_EQ(samples[pid_b].count(id_a), 0u);

  // bpfprof report by cgroup and pid: each burner under its cgroup's path.
  RunResult rep = run({kBin + "/bpfprof", "report", "-q", "-i", data, "--format", "json",
                       "--sort", "cgroup,pid,container"});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  const auto j = nlohmann::json::parse(rep.out);
  // A burner's first samples may come before it moved itself: its row with
  // the most samples (entries are sorted by samples) is its cgroup's.
  std::map<std::string, std::string> cgroup_of_pid;
  for (const auto& e : j["entries"]) {
    cgroup_of_pid.emplace(e["pid"].get<std::string>(), e["cgroup"].get<std::string>());
    EXPECT_EQ(e["container"], e["cgroup"]) << "no container runtime's path";
  }
  EXPECT_EQ(cgroup_of_pid[std::to_string(pid_a) + ":sh"], "/" + name + "-a");
  EXPECT_EQ(cgroup_of_pid[std::to_string(pid_b) + ":sh"], "/" + name + "-b");
  EXPECT_FALSE(j["diagnostics"].contains("cgroup_unknown")) << j["diagnostics"].dump();

  // pprof: every sample carries its cgroup as a label; each burner's most
  // sampled cgroup is its own.
  const std::string pb_path = dir.file("cg.pb.gz");
  RunResult exp = run({kBin + "/bpfprof", "export", "-q", "-i", data, "--format", "pprof", "-o",
                       pb_path});
  ASSERT_EQ(exp.exit_code, 0) << exp.err;
  std::ifstream pb_in(pb_path, std::ios::binary);
  const std::string gz((std::istreambuf_iterator<char>(pb_in)), std::istreambuf_iterator<char>());
  auto raw = exporter::gzip_decompress(gz);
  ASSERT_TRUE(raw.ok()) << raw.error().to_string();
  perftools::profiles::Profile prof;
  ASSERT_TRUE(prof.ParseFromString(*raw));
  auto str = [&](int64_t i) { return prof.string_table(static_cast<int>(i)); };
  std::map<int64_t, std::map<std::string, int64_t>> labeled;  // pid -> cgroup -> samples
  int64_t total = 0, with_cgroup = 0;
  for (const auto& s : prof.sample()) {
    int64_t pid = -1;
    std::string cgroup;
    for (const auto& l : s.label()) {
      if (str(l.key()) == "pid") pid = l.num();
      if (str(l.key()) == "cgroup") cgroup = str(l.str());
    }
    total += s.value(0);
    if (cgroup.empty()) continue;
    with_cgroup += s.value(0);
    labeled[pid][cgroup] += s.value(0);
  }
  EXPECT_GT(total, 0);
  EXPECT_EQ(with_cgroup, total) << "every sample of a --cgroup recording has a cgroup";
  auto most = [](const std::map<std::string, int64_t>& m) {
    std::string best;
    int64_t n = -1;
    for (const auto& [k, v] : m) {
      if (v > n) best = k, n = v;
    }
    return best;
  };
  EXPECT_EQ(most(labeled[pid_a]), "/" + name + "-a");
  EXPECT_EQ(most(labeled[pid_b]), "/" + name + "-b");

  // Linux perf reads the file and names the cgroups the same.
  RunResult perf_rep = run({"perf", "report", "-i", data, "--stdio", "--sort", "cgroup,pid"});
  ASSERT_EQ(perf_rep.exit_code, 0) << perf_rep.err;
  EXPECT_NE(perf_rep.out.find("/" + name + "-a"), std::string::npos) << perf_rep.out;
  EXPECT_NE(perf_rep.out.find("/" + name + "-b"), std::string::npos) << perf_rep.out;
  RunResult perf_script = run({"perf", "script", "-i", data, "-F", "comm,pid"});
  ASSERT_EQ(perf_script.exit_code, 0) << perf_script.err;
  EXPECT_NE(perf_script.out.find(" " + std::to_string(pid_a) + " \n"), std::string::npos)
      << perf_script.out.substr(0, 2000);
}

// The loader's cgroup of every program loaded during a default recording
// (in-kernel capture, no --cgroup): two workloads load programs from two
// cgroups the test creates — one before recording (synthesized at start),
// one during it (a live CGROUP record). Section 253 must give each program
// its loader's cgroup id, the CGROUP records must name those ids, and the
// report must show the path as the owner's cgroup. Ground truth: the
// workloads' own program ids and pids, the cgroups' inode numbers.
TEST(CgroupKernelTest, NamesTheCgroupOfEachProgramsLoader) {
  const std::string mount = cgroup2_mount();
  if (mount.empty()) BPFPROF_KERNEL_SKIP("no cgroup v2 hierarchy mounted");
  if (::geteuid() != 0) BPFPROF_KERNEL_SKIP("creating cgroups needs root");
  if (std::string why = bpf_refusal(kBin); !why.empty()) BPFPROF_KERNEL_SKIP(why);
  TempDir dir;
  const std::string name = "bpfprof-test-loader-" + std::to_string(::getpid());
  TwoCgroups cgroups(mount, name);
  ASSERT_NE(cgroups.id_a, 0u) << cgroups.a;
  const std::string &a = cgroups.a, &b = cgroups.b;
  const uint64_t id_a = cgroups.id_a;

  // Each workload moves itself into its cgroup, then loads and runs a few
  // programs (and writes their ids).
  const std::string load = "echo $$ > \"$1/cgroup.procs\" && exec \"$2\" --programs 3 "
                           "--subprog-programs 1 --long-lived 10ms --quiet --truth \"$3\"";
  const std::string script =
      "mkdir '" + b + "' && stat -c %i '" + b + "' > '" + dir.file("b.id") + "' || exit 1; " +
      "sh -c '" + load + "' w '" + a + "' '" + kBin + "/bpfprof-workload' '" + dir.file("a.json") + "' & " +
      "sh -c '" + load + "' w '" + b + "' '" + kBin + "/bpfprof-workload' '" + dir.file("b.json") + "' & wait";
  const std::string data = dir.file("loaders.data");
  RunResult rec = run({kBin + "/bpfprof", "record", "-a", "-F", "99", "-q", "-o", data, "--", "sh",
                       "-c", script});
  if (rec.exit_code == 2 && rec.err.find("ermission") != std::string::npos) {
    BPFPROF_KERNEL_SKIP("recording refused: " + rec.err);
  }
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  const uint64_t id_b = std::stoull(read_word(dir.file("b.id")));
  auto truth = [&](const std::string& file) {
    std::ifstream in(file);
    return nlohmann::json::parse(in);
  };
  const nlohmann::json truth_a = truth(dir.file("a.json")), truth_b = truth(dir.file("b.json"));

  RunResult rep = run({kBin + "/bpfprof", "report", "-q", "-i", data, "--format", "json",
                       "--instances"});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  const auto j = nlohmann::json::parse(rep.out);
  if (j["enrichment"]["in_kernel"] != "used") {
    BPFPROF_KERNEL_SKIP("in-kernel capture " + j["enrichment"]["in_kernel"].get<std::string>());
  }

  // The records: a loader entry per program, the cgroups named.
  auto reader = perfdata::FileReader::open(data);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  ASSERT_TRUE(reader->features().owners.has_value());
  std::map<uint32_t, uint64_t> loader_cgroup;
  for (const perfdata::ProgramLoader& l : reader->features().owners->loaders) {
    loader_cgroup[l.prog_id] = l.cgroup_id;
  }
  std::map<uint64_t, std::string> paths;
  ASSERT_TRUE(reader
                  ->for_each_record([&](const perf::RecordView& r, uint64_t) {
                    if (r.header.type != perf::kRecordCgroup) return;
                    auto c = perf::Cgroup::parse(r, reader->attr_for(r)->layout);
                    ASSERT_TRUE(c.ok()) << c.error().to_string();
                    paths[c->id] = std::string(c->path);
                  })
                  .ok());
  EXPECT_EQ(paths[id_a], "/" + name + "-a");
  EXPECT_EQ(paths[id_b], "/" + name + "-b");

  std::map<uint32_t, nlohmann::json> reported;  // program id -> its row
  for (const auto& p : j["programs"]) reported[p["id"].get<uint32_t>()] = p;
  size_t checked = 0;
  for (const auto& [t, cgroup, path] :
       {std::tuple{&truth_a, id_a, "/" + name + "-a"}, std::tuple{&truth_b, id_b, "/" + name + "-b"}}) {
    const std::string owner = "bpfprof-workloa[" + std::to_string((*t)["pid"].get<int>()) + "]";
    ASSERT_FALSE((*t)["programs"].empty());
    for (const auto& p : (*t)["programs"]) {
      const uint32_t id = p["id"].get<uint32_t>();
      EXPECT_EQ(loader_cgroup[id], cgroup) << "program " << id;
      ASSERT_EQ(reported.count(id), 1u) << "program " << id;
      EXPECT_EQ(reported[id]["owner"], owner) << reported[id].dump();
      EXPECT_EQ(reported[id]["owner_cgroup"], path) << reported[id].dump();
      checked++;
    }
  }
  EXPECT_EQ(checked, truth_a["programs"].size() + truth_b["programs"].size());
  // The header line charges each workload's samples to it, in its cgroup.
  for (const auto& o : j["owners"]) {
    const std::string owner = o["owner"];
    if (owner == "bpfprof-workloa[" + std::to_string(truth_a["pid"].get<int>()) + "]") {
      EXPECT_EQ(o["cgroup"], "/" + name + "-a") << o.dump();
    }
  }

  // Linux perf reads it (its CGROUP records too).
  RunResult perf_script = run({"perf", "script", "-i", data, "--show-cgroup-events"});
  ASSERT_EQ(perf_script.exit_code, 0) << perf_script.err;
  EXPECT_NE(perf_script.out.find("/" + name + "-b"), std::string::npos)
      << perf_script.out.substr(0, 2000);
  RunResult perf_rep = run({"perf", "report", "-i", data, "--stdio", "--sort", "cgroup"});
  EXPECT_EQ(perf_rep.exit_code, 0) << perf_rep.err;
}

// script --format json: a BPF leaf sample names its program's owner, the
// owner's cgroup, the attach point and the cgroup of the task it interrupted. The workload,
// moved into the test's cgroup, test-runs its long-lived program for 1 s.
TEST(CgroupKernelTest, ScriptJsonNamesOwnerAttachAndCgroupOfBpfLeaves) {
  const std::string mount = cgroup2_mount();
  if (mount.empty()) BPFPROF_KERNEL_SKIP("no cgroup v2 hierarchy mounted");
  if (::geteuid() != 0) BPFPROF_KERNEL_SKIP("creating cgroups needs root");
  if (std::string why = bpf_refusal(kBin); !why.empty()) BPFPROF_KERNEL_SKIP(why);
  TempDir dir;
  const std::string name = "bpfprof-test-script-" + std::to_string(::getpid());
  CgroupDirs cleanup;
  ASSERT_EQ(::mkdir((mount + "/" + name).c_str(), 0755), 0) << name;
  cleanup.dirs.push_back(mount + "/" + name);
  const std::string data = dir.file("script.data");
  RunResult rec = run({kBin + "/bpfprof", "record", "-a", "--cgroup", "-F", "999", "-q", "-o", data,
                       "--", "sh", "-c",
                       "echo $$ > \"$1/cgroup.procs\" && echo $$ > \"$3\" && "
                       "exec \"$2\" --long-lived 1s --programs 2 --quiet",
                       "sh", mount + "/" + name, kBin + "/bpfprof-workload", dir.file("pid")});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  // Only this workload's samples: another one may burn a long_burner meanwhile.
  const int pid = std::stoi(read_word(dir.file("pid")));
  RunResult script = run({kBin + "/bpfprof", "script", "-q", "-i", data, "--format", "json"});
  ASSERT_EQ(script.exit_code, 0) << script.err;
  size_t burner = 0;
  std::istringstream lines(script.out);
  for (std::string line; std::getline(lines, line);) {
    const auto s = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(s.is_object()) << line;
    if (!s.contains("bpf_prog") || s["bpf_prog"] != "long_burner" || s["pid"] != pid) continue;
    burner++;
    // Loaded and run by the workload itself, in the test's cgroup.
    EXPECT_EQ(s.at("owner"), "bpfprof-workloa[" + std::to_string(s.at("pid").get<int>()) + "]") << line;
    EXPECT_EQ(s.at("owner_cgroup"), "/" + name) << line;
    EXPECT_FALSE(s.at("attach").get<std::string>().empty()) << line;
    EXPECT_EQ(s.at("cgroup"), "/" + name) << line;
  }
  EXPECT_GT(burner, 0u) << "no sample in long_burner";
}

}  // namespace
}  // namespace bpfprof::testing
