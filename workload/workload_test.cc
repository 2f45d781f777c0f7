// SPDX-License-Identifier: Apache-2.0
// Runs the built bpfprof-workload against the real kernel and checks the truth
// file it writes. Skips (saying why) only where --probe says BPF is refused.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "testing/paths.h"

namespace {

const std::string kBin = BPFPROF_WORKLOAD_BIN;

struct Child {
  int status = -1;
  std::string out;  // stdout and stderr together
  int exit_code() const { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }
};

// Runs `args` to completion, capturing its output.
Child run(const std::vector<std::string>& args) {
  std::string cmd;
  for (const std::string& a : args) cmd += "'" + a + "' ";
  cmd += "2>&1";
  Child c;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return c;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) c.out.append(buf, n);
  c.status = pclose(p);
  return c;
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "bpfprof_workload_" + std::to_string(getpid()) + "_" + name;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "no truth file " << path;
  if (!in.good()) return {};
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

class WorkloadTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Child probe = run({kBin, "--probe"});
    if (probe.exit_code() == 3) {
      skip_reason_ = new std::string(probe.out);
      return;
    }
    ASSERT_EQ(probe.exit_code(), 0) << probe.out;
    std::string path = temp_path("truth.json");
    Child w = run({kBin, "--programs", "4", "--lifetime", "1ms,20ms", "--subprog-programs", "1",
                   "--long-lived", "200ms", "--truth", path});
    output_ = new std::string(w.out);
    ASSERT_EQ(w.exit_code(), 0) << w.out;
    truth_ = new nlohmann::json(read_json(path));
    std::remove(path.c_str());
  }
  static void TearDownTestSuite() {
    delete skip_reason_;
    delete output_;
    delete truth_;
    skip_reason_ = output_ = nullptr;
    truth_ = nullptr;
  }
  void SetUp() override {
    if (skip_reason_) GTEST_SKIP() << "BPF refused here: " << *skip_reason_;
    ASSERT_NE(truth_, nullptr);
    ASSERT_TRUE(truth_->is_object()) << "truth is not JSON; workload said:\n" << *output_;
  }
  static const nlohmann::json& programs() { return (*truth_)["programs"]; }

  static std::string* skip_reason_;
  static std::string* output_;
  static nlohmann::json* truth_;
};
std::string* WorkloadTest::skip_reason_ = nullptr;
std::string* WorkloadTest::output_ = nullptr;
nlohmann::json* WorkloadTest::truth_ = nullptr;

TEST_F(WorkloadTest, HeaderAndCounts) {
  EXPECT_EQ((*truth_)["clock"], "CLOCK_MONOTONIC");
  EXPECT_GT((*truth_)["pid"].get<int>(), 0);
  ASSERT_EQ(programs().size(), 6u);
  std::map<std::string, int> kinds;
  std::set<uint32_t> ids;
  for (const auto& p : programs()) {
    kinds[p["kind"]]++;
    ids.insert(p["id"].get<uint32_t>());
  }
  EXPECT_EQ(kinds["burner"], 4);
  EXPECT_EQ(kinds["subprog"], 1);
  EXPECT_EQ(kinds["long-lived"], 1);
  EXPECT_EQ(ids.size(), 6u) << "ids must be distinct";
}

TEST_F(WorkloadTest, ProgramsRanAndWereUnloaded) {
  for (const auto& p : programs()) {
    SCOPED_TRACE(p.dump());
    EXPECT_EQ(p["tag"].get<std::string>().size(), 16u);
    EXPECT_GT(p["unload_ns"].get<uint64_t>(), p["load_ns"].get<uint64_t>());
    EXPECT_GT(p["run_count"].get<uint64_t>(), 0u);
    EXPECT_GT(p["run_ns"].get<uint64_t>(), 0u);
    EXPECT_GT(p["cpu_ns"].get<uint64_t>(), 0u);
  }
}

TEST_F(WorkloadTest, LifetimesAreHonoured) {
  std::set<uint64_t> nominal;
  for (const auto& p : programs()) {
    if (p["kind"] != "burner") continue;
    uint64_t want = p["lifetime_ns"], life = p["unload_ns"].get<uint64_t>() - p["load_ns"].get<uint64_t>();
    nominal.insert(want);
    EXPECT_GE(life, want) << p["id"];
    EXPECT_LE(life, want + 50'000'000) << p["id"];
  }
  EXPECT_EQ(nominal, (std::set<uint64_t>{1'000'000, 20'000'000})) << "lifetimes cycle";
}

TEST_F(WorkloadTest, LongLivedOutlivesTheRest) {
  const nlohmann::json* longest = nullptr;
  uint64_t first_load = UINT64_MAX, last_unload = 0;
  for (const auto& p : programs()) {
    if (p["kind"] == "long-lived") {
      longest = &p;
      continue;
    }
    first_load = std::min(first_load, p["load_ns"].get<uint64_t>());
    last_unload = std::max(last_unload, p["unload_ns"].get<uint64_t>());
  }
  ASSERT_NE(longest, nullptr);
  EXPECT_LT((*longest)["load_ns"].get<uint64_t>(), first_load);
  EXPECT_GE((*longest)["unload_ns"].get<uint64_t>(), last_unload + 200'000'000);
  EXPECT_EQ((*longest)["name"], "long_burner");
}

TEST_F(WorkloadTest, FunctionsAreNamedLikeTheKernel) {
  for (const auto& p : programs()) {
    SCOPED_TRACE(p["name"].get<std::string>() + " " + std::to_string(p["id"].get<uint32_t>()));
    const auto& fns = p["functions"];
    if (p["kind"] == "subprog") {
      ASSERT_GE(fns.size(), 3u) << "main + two subprograms";
    } else {
      ASSERT_GE(fns.size(), 1u);
    }
    for (const auto& f : fns) {
      EXPECT_EQ(f["ksym"].get<std::string>().rfind("bpf_prog_", 0), 0u) << f.dump();
      EXPECT_NE(f["addr"].get<uint64_t>(), 0u);
      EXPECT_GT(f["len"].get<uint32_t>(), 0u);
    }
    // The entry point carries the program's tag and name.
    EXPECT_EQ(fns[0]["ksym"], "bpf_prog_" + p["tag"].get<std::string>() + "_" + p["name"].get<std::string>());
    if (p["kind"] == "long-lived") {
      EXPECT_EQ(fns[0]["ksym_from"], "kallsyms");
    }
  }
}

TEST_F(WorkloadTest, HotLinePointsAtTheMarkedLine) {
  const auto& hot = programs()[0]["hot_line"];
  std::ifstream src(hot["file"].get<std::string>());
  ASSERT_TRUE(src.good()) << hot.dump();
  std::string line;
  for (int i = 0; i < hot["line"].get<int>(); i++) std::getline(src, line);
  EXPECT_NE(line.find("/* HOT LINE */"), std::string::npos) << line;
}

TEST_F(WorkloadTest, HoldRunsUntilSignalled) {
  std::string path = temp_path("hold.json");
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    execl(kBin.c_str(), kBin.c_str(), "--hold", "--quiet", "--truth", path.c_str(), nullptr);
    _exit(127);
  }
  close(out[1]);
  FILE* f = fdopen(out[0], "r");
  unsigned id = 0;
  int matched = std::fscanf(f, "ready %u", &id);
  usleep(20'000);
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  std::fclose(f);
  ASSERT_EQ(matched, 1) << "no 'ready <id>' line";
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  nlohmann::json held = read_json(path);
  std::remove(path.c_str());
  ASSERT_EQ(held["programs"].size(), 1u);
  const auto& p = held["programs"][0];
  EXPECT_EQ(p["id"].get<unsigned>(), id);
  EXPECT_EQ(p["kind"], "hold");
  EXPECT_GT(p["run_count"].get<uint64_t>(), 0u);
  EXPECT_EQ(p["functions"][0]["ksym_from"], "kallsyms");
}

TEST(WorkloadCli, RejectsBadDurations) {
  Child c = run({kBin, "--lifetime", "10parsecs"});
  EXPECT_EQ(c.exit_code(), 2) << c.out;
  EXPECT_NE(c.out.find("bad duration"), std::string::npos) << c.out;
}

}  // namespace
