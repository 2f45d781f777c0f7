// SPDX-License-Identifier: Apache-2.0
// Real kernel and real terminal: `bpfprof top` runs while the workload loads
// a long-lived program and short-lived ones. --stdio prints a block per
// refresh naming them, --format json an object per refresh (the short-lived
// instances of one code in one row); the curses screen, driven through a
// detached tmux session of fixed size, shows them, reacts to keys, and on `q`
// or Ctrl-C exits 0 with the terminal given back to the shell. With the
// workload's programs attached for real, top names each attach point.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "testing/cgroup2.h"
#include "testing/paths.h"
#include "testing/subprocess.h"

namespace bpfprof::testing {
namespace {

const std::string kBin = BPFPROF_BIN_DIR;

std::vector<std::string> workload_argv() {
  return {kBin + "/bpfprof-workload", "--long-lived", "6s", "--programs", "10", "--lifetime",
          "200ms", "--quiet"};
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) n++;
  return n;
}

// A line of the program table naming the short-lived program (not long_burner).
bool has_short_lived(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find("  burner") != std::string::npos) return true;
  }
  return false;
}

class TopKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = bpf_refusal(kBin); !why.empty()) BPFPROF_KERNEL_SKIP(why);
    if (::geteuid() != 0) BPFPROF_KERNEL_SKIP("not root: top needs CAP_PERFMON and CAP_BPF");
  }
};

TEST_F(TopKernelTest, StdioPrintsABlockPerRefreshNamingThePrograms) {
  Background workload(workload_argv());
  RunResult top = run({kBin + "/bpfprof", "top", "--stdio", "-n", "3", "-d", "1"});
  if (top.exit_code == 2 && top.err.find("needs CAP") != std::string::npos) {
    BPFPROF_KERNEL_SKIP("top refused: " + top.err);
  }
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_EQ(count(top.out, "bpfprof top  refresh "), 3u) << top.out;
  EXPECT_GE(count(top.out, "BPF PROGRAM"), 2u);
  EXPECT_NE(top.out.find("long_burner"), std::string::npos) << top.out;
  EXPECT_TRUE(has_short_lived(top.out)) << top.out;
  EXPECT_NE(top.out.find("BPF stats on"), std::string::npos) << top.out;
  // The long-lived program runs all the time: it has samples and runs.
  std::istringstream in(top.out);
  bool hot = false;
  for (std::string line; std::getline(in, line);) {
    if (line.find("long_burner") == std::string::npos) continue;
    double percent = 0;
    if (std::sscanf(line.c_str(), "%lf%%", &percent) == 1 && percent > 0) hot = true;
  }
  EXPECT_TRUE(hot) << top.out;
}

// --format json: one object per refresh, a line each, every line parses and
// names the workload's programs with their figures and their owner.
TEST_F(TopKernelTest, JsonPrintsAnObjectPerRefresh) {
  Background workload(workload_argv());
  RunResult top = run({kBin + "/bpfprof", "top", "--format", "json", "-n", "3", "-d", "1"});
  if (top.exit_code == 2 && top.err.find("needs CAP") != std::string::npos) {
    BPFPROF_KERNEL_SKIP("top refused: " + top.err);
  }
  ASSERT_EQ(top.exit_code, 0) << top.err;
  std::istringstream in(top.out);
  uint64_t refreshes = 0;
  bool long_hot = false, short_seen = false;
  size_t most_instances = 0;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(j.is_object()) << "not JSON: " << line;
    EXPECT_EQ(j.at("refresh").get<uint64_t>(), ++refreshes) << line;
    EXPECT_GT(j.at("seconds").get<double>(), 0) << line;
    EXPECT_TRUE(j.at("symbols").is_array());
    EXPECT_TRUE(j.at("run_stats").get<bool>()) << line;
    uint64_t program_samples = 0;
    bool short_seen_now = false;
    for (const auto& p : j.at("programs")) {
      EXPECT_EQ(p.at("tag").get<std::string>().size(), 16u) << p;
      program_samples += p.at("samples").get<uint64_t>();
      // The workload loaded them while top ran: their BPF_EVENT names it.
      // The row groups every instance of the code, so another process
      // loading the same programs at the same time adds itself as an owner.
      if (p.at("name") == "long_burner" || p.at("name") == "burner") {
        const std::string owners = "," + p.at("owner").get<std::string>() + ",";
        EXPECT_NE(owners.find(",bpfprof-workloa[" + std::to_string(workload.pid()) + "],"),
                  std::string::npos)
            << p;
      }
      if (p.at("name") == "long_burner" && p.at("cpu_percent").get<double>() > 0) long_hot = true;
      // The short-lived programs are one code: one row holding every instance.
      if (p.at("name") == "burner") {
        EXPECT_FALSE(short_seen_now) << "two burner rows in one refresh: " << line;
        short_seen = short_seen_now = true;
        const auto ids = p.at("ids").get<std::vector<uint32_t>>();
        EXPECT_EQ(p.at("instances").get<size_t>(), ids.size()) << p;
        EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end())) << p;
        most_instances = std::max(most_instances, ids.size());
      }
    }
    EXPECT_LE(program_samples, j.at("samples").get<uint64_t>()) << line;
  }
  EXPECT_EQ(refreshes, 3u) << top.out;
  EXPECT_TRUE(long_hot) << top.out;
  EXPECT_TRUE(short_seen) << top.out;
  // 10 loaded one after the other over 2 s, shown gone for 3 refreshes.
  EXPECT_GE(most_instances, 2u) << top.out;
}

// The attach column: the workload attaches a tracepoint, a raw tracepoint,
// XDP on a veth in a namespace of its own and cgroup_skb/egress on the
// test's cgroup before top starts; top names each point as the workload's
// truth does, in the JSON lines and on the text screen.
TEST_F(TopKernelTest, AttachColumnNamesWhereProgramsAreAttached) {
  const std::string mount = cgroup2_mount();
  if (mount.empty()) BPFPROF_KERNEL_SKIP("no cgroup v2 hierarchy mounted");
  struct Cgroup {
    std::string dir;
    ~Cgroup() { ::rmdir(dir.c_str()); }
  } cgroup{mount + "/bpfprof-top-attach-" + std::to_string(::getpid())};
  ASSERT_EQ(::mkdir(cgroup.dir.c_str(), 0755), 0) << cgroup.dir;
  TempDir dir;
  const std::string truth_path = dir.file("truth.json");
  Background workload({kBin + "/bpfprof-workload", "--attached", "--cgroup", cgroup.dir,
                       "--truth", truth_path});
  ASSERT_EQ(workload.wait_for_line("ready"), "ready");
  const std::string holder = "[" + std::to_string(workload.pid()) + "]";
  RunResult json = run({kBin + "/bpfprof", "top", "--format", "json", "-n", "1", "-d", "0.5"});
  RunResult text = run({kBin + "/bpfprof", "top", "--stdio", "-n", "1", "-d", "0.5"});
  ASSERT_EQ(workload.stop(SIGTERM), 0);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  ASSERT_EQ(text.exit_code, 0) << text.err;

  std::ifstream in(truth_path);
  const auto truth = nlohmann::json::parse(in, nullptr, false);
  ASSERT_TRUE(truth.is_object()) << truth_path;
  ASSERT_EQ(truth.at("programs").size(), 4u) << truth;
  const auto j = nlohmann::json::parse(json.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << json.out;
  for (const auto& t : truth["programs"]) {
    const std::string name = t.at("name"), point = t.at("attach").at(0);
    const uint32_t id = t.at("id");
    bool found = false;
    for (const auto& p : j.at("programs")) {
      const auto ids = p.at("ids").get<std::vector<uint32_t>>();
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) continue;
      found = true;
      EXPECT_EQ(p.at("name"), name) << p;
      EXPECT_EQ(p.at("attach_points"), nlohmann::json::array({point})) << p;
      EXPECT_EQ(p.at("attach"), point) << p;
      // Loaded before top started: the process holding it (its comm changes).
      EXPECT_TRUE(p.at("owner").get<std::string>().ends_with(holder)) << p;
    }
    EXPECT_TRUE(found) << name << " (id " << id << ") not in " << json.out;
    // On the screen: its row ends with the point.
    bool on_screen = false;
    std::istringstream lines(text.out);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("  " + name + " ") != std::string::npos && line.ends_with("  " + point)) {
        on_screen = true;
      }
    }
    EXPECT_TRUE(on_screen) << name << " " << point << "\n" << text.out;
  }
}

// tmux on a private socket, one detached session of fixed size.
class Tmux {
 public:
  Tmux() : socket_("bpfprof-top-test-" + std::to_string(::getpid())) {}
  ~Tmux() { tmux({"kill-server"}); }
  RunResult tmux(std::vector<std::string> args) {
    args.insert(args.begin(), {"tmux", "-L", socket_});
    return run(args);
  }
  bool start(const std::string& shell_command) {
    return tmux({"new-session", "-d", "-s", "top", "-x", "150", "-y", "45", shell_command})
               .exit_code == 0;
  }
  std::string screen() { return tmux({"capture-pane", "-p", "-t", "top"}).out; }
  void keys(const std::string& k) { tmux({"send-keys", "-t", "top", k}); }
  // Polls the pane until `pred` holds or `seconds` pass; returns the last screen.
  template <class Pred>
  std::string wait_for(Pred pred, double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    std::string s = screen();
    while (!pred(s) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      s = screen();
    }
    return s;
  }

 private:
  std::string socket_;
};

bool have_tmux() { return run({"tmux", "-V"}).exit_code == 0; }

// After top: the exit code, then the pane stays open for capture-pane.
std::string top_in_shell(const std::string& extra = "") {
  return "bash -c '" + kBin + "/bpfprof top" + extra + "; echo EXIT=$?; sleep 60'";
}

TEST_F(TopKernelTest, CursesScreenShowsProgramsAndQuitsOnQ) {
  if (!have_tmux()) GTEST_SKIP() << "tmux not installed (scripts/install-deps.sh installs it)";
  Background workload(workload_argv());
  Tmux t;
  ASSERT_TRUE(t.start(top_in_shell()));
  std::string s = t.wait_for(
      [](const std::string& s) {
        return s.find("long_burner") != std::string::npos && has_short_lived(s);
      },
      15);
  ASSERT_NE(s.find("long_burner"), std::string::npos) << s;
  EXPECT_TRUE(has_short_lived(s)) << s;
  EXPECT_NE(s.find("BPF PROGRAM"), std::string::npos) << s;
  EXPECT_NE(s.find("sort CPU%"), std::string::npos) << s;

  t.keys("s");
  s = t.wait_for([](const std::string& s) { return s.find("sort runs/s") != std::string::npos; }, 5);
  EXPECT_NE(s.find("sort runs/s"), std::string::npos) << s;
  t.keys("b");
  s = t.wait_for([](const std::string& s) { return s.find("BPF SYMBOL") != std::string::npos; }, 5);
  EXPECT_NE(s.find("BPF-only"), std::string::npos) << s;
  EXPECT_NE(s.find("INST          IDS  BPF PROGRAM"), std::string::npos) << s;
  t.keys("i");
  s = t.wait_for([](const std::string& s) { return s.find("  instances") != std::string::npos; }, 5);
  EXPECT_NE(s.find("AVG ns      ID  BPF PROGRAM"), std::string::npos) << s;

  t.keys("q");
  s = t.wait_for([](const std::string& s) { return s.find("EXIT=") != std::string::npos; }, 10);
  EXPECT_NE(s.find("EXIT=0"), std::string::npos) << s;
  // The curses screen is gone: the shell's screen is back.
  EXPECT_EQ(s.find("BPF PROGRAM"), std::string::npos) << s;
}

TEST_F(TopKernelTest, CtrlCRestoresTheTerminalAndExitsZero) {
  if (!have_tmux()) GTEST_SKIP() << "tmux not installed (scripts/install-deps.sh installs it)";
  Tmux t;
  ASSERT_TRUE(t.start(top_in_shell(" -d 0.5")));
  std::string s = t.wait_for(
      [](const std::string& s) { return s.find("BPF PROGRAM") != std::string::npos; }, 15);
  ASSERT_NE(s.find("BPF PROGRAM"), std::string::npos) << s;
  t.keys("C-c");
  s = t.wait_for([](const std::string& s) { return s.find("EXIT=") != std::string::npos; }, 10);
  EXPECT_NE(s.find("EXIT=0"), std::string::npos) << s;
  EXPECT_EQ(s.find("BPF PROGRAM"), std::string::npos) << s;
}

TEST_F(TopKernelTest, WithoutPrivilegesOneLineAndExit2) {
  RunResult top = run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                       "--inh-caps=-all", "--bounding-set=-all", kBin + "/bpfprof", "top",
                       "--stdio", "-n", "1"});
  if (top.exit_code == 127) GTEST_SKIP() << "setpriv not available";
  EXPECT_EQ(top.exit_code, 2) << top.out << top.err;
  EXPECT_EQ(count(top.err, "\n"), 1u) << top.err;
  EXPECT_NE(top.err.find("bpfprof top: "), std::string::npos) << top.err;
  EXPECT_NE(top.err.find("needs CAP_"), std::string::npos) << top.err;
  EXPECT_TRUE(top.out.empty()) << top.out;
}

}  // namespace
}  // namespace bpfprof::testing
