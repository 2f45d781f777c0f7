// SPDX-License-Identifier: Apache-2.0
// Peer test: speedscope, a real importer of perf script text, reads `bpfprof
// script` of a `-g` recording of the workload (system-wide), and the stacks
// it read equal those `bpfprof script --format json` gives for the same file.
// speedscope is the npm package pinned in testing/speedscope/ (installed by
// scripts/install-deps.sh); testing/speedscope/import.mjs opens its page in
// headless Chromium, gives it the text through its Browse button and saves
// what its Export button writes: speedscope's own JSON, the frames and, per
// profile, the stacks in the order it read them.
//
// What speedscope makes of perf script text (its perf-script importer, the
// one it picks for text it recognises as such, whatever the file's name):
// one profile per thread, named "comm tid: N" ("comm" for tid 0); a frame is
// its symbol without "+0x…" (or "??? (dso)" for "[unknown]") in its dso as
// the file; a sample's stack goes root to leaf. Samples weigh time, not
// one each: a sample stands for the time from the midpoint with its thread's
// sample before it to the midpoint with the one after (from its own time for
// the thread's first sample, to its own time for the last); a sample of zero
// weight is left out and consecutive samples with one stack are one stretch.
// A frame's line splits at the last " (" that a word without spaces follows:
// a dso with a space in it ("/memfd:x (deleted)") ends up partly in the
// name, so such frames must only read back as the same "name (file)" text.
// The export lists, per profile, frames opening and closing at a running
// total of those weights. So from our JSON lines this test derives, per
// thread, the stretches of stacks with their weights, and they must equal
// speedscope's one for one: the same stacks in the same order, each weight
// within 1 ns (the times printed have microseconds).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "testing/paths.h"
#include "testing/subprocess.h"
#include "testing/workload_recording.h"

namespace bpfprof::script {
namespace {

const std::string kBin = BPFPROF_BIN_DIR;
const std::string kDriverDir = std::string(BPFPROF_SOURCE_DIR) + "/testing/speedscope";
constexpr const char* kChromium = "/usr/bin/chromium";  // import.mjs's default

struct Frame {
  std::string name, file;
  bool operator==(const Frame&) const = default;
  std::string text() const { return name + " (" + file + ")"; }
};
using Stack = std::vector<Frame>;  // root first

// A stretch of samples of one thread with one stack, and its weight (s).
struct Stretch {
  Stack stack;
  double weight = 0;
  size_t samples = 0;  // ours only: how many samples it holds
};
using Profiles = std::map<std::string, std::vector<Stretch>>;  // by profile name

// Our samples of one thread in time order, weighed as speedscope weighs
// perf script samples (above).
class ThreadStretches {
 public:
  void add(Stack stack, double time) {
    if (pending_) {
      const double end = (time + pending_->time) / 2;
      append(std::move(pending_->stack), end - pending_->start);
      pending_ = Pending{std::move(stack), end, time};
    } else {
      pending_ = Pending{std::move(stack), time, time};
    }
  }
  std::vector<Stretch> finish() {
    if (pending_) {
      // A thread's only sample weighs 1 (speedscope: "units meaningless").
      append(std::move(pending_->stack), stretches_.empty() ? 1.0 : pending_->time - pending_->start);
    }
    return std::move(stretches_);
  }

 private:
  struct Pending {
    Stack stack;
    double start, time;
  };
  void append(Stack stack, double weight) {
    if (weight == 0) return;
    if (!stretches_.empty() && stretches_.back().stack == stack) {
      stretches_.back().weight += weight;
      stretches_.back().samples++;
    } else {
      stretches_.push_back({std::move(stack), weight, 1});
    }
  }
  std::optional<Pending> pending_;
  std::vector<Stretch> stretches_;
};

// The profiles speedscope would make of our samples, from our JSON lines.
Profiles ours_from_json(const std::string& lines, size_t& samples) {
  std::map<std::string, ThreadStretches> threads;
  std::istringstream in(lines);
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    const uint64_t tid = j["tid"].get<uint64_t>(), ns = j["time"].get<uint64_t>();
    // A sample of tid -1 (a thread the kernel no longer maps to an id):
    // speedscope does not read a header with a negative tid as perf
    // script's (neither perf's nor ours), see speedscope_from_export.
    if (static_cast<int32_t>(tid) == -1) continue;
    samples++;
    std::string comm = j["comm"].get<std::string>();
    if (comm.empty()) comm = ":" + std::to_string(tid);  // as the text prints an unnamed thread
    const std::string profile = tid != 0 ? comm + " tid: " + std::to_string(tid) : comm;
    Stack stack;
    const auto& chain = j["callchain"];
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const std::string sym = (*it)["sym"].get<std::string>(), dso = (*it)["dso"].get<std::string>();
      stack.push_back({sym, dso});
    }
    // The time as the text prints it (seconds.micros), read as a double.
    char printed[48];
    std::snprintf(printed, sizeof printed, "%llu.%06llu",
                  static_cast<unsigned long long>(ns / 1000000000),
                  static_cast<unsigned long long>(ns % 1000000000 / 1000));
    threads[profile].add(std::move(stack), std::stod(printed));
  }
  Profiles out;
  for (auto& [name, t] : threads) out[name] = t.finish();
  return out;
}

// The profiles of speedscope's export: the stack open between two events
// is one stretch, weighing the distance between them.
Profiles speedscope_from_export(const nlohmann::json& file) {
  std::vector<Frame> frames;
  for (const auto& f : file["shared"]["frames"]) {
    frames.push_back({f["name"].get<std::string>(), f.value("file", "")});
  }
  Profiles out;
  for (const auto& p : file["profiles"]) {
    // The thread of a tid -1 header: speedscope keeps the whole header as
    // its name ("comm    -1 [001] 21560.053008: tid: <period>").
    if (p["name"].get<std::string>().find(" -1 [") != std::string::npos) continue;
    EXPECT_EQ(p["type"], "evented") << p["name"];
    std::vector<Stretch>& stretches = out[p["name"].get<std::string>()];
    Stack open;
    double at = p["startValue"].get<double>();
    auto close_stretch = [&](double to) {
      if (to > at) stretches.push_back({open, to - at, 0});
      at = std::max(at, to);
    };
    for (const auto& e : p["events"]) {
      close_stretch(e["at"].get<double>());
      const Frame& frame = frames.at(e["frame"].get<size_t>());
      if (e["type"] == "O") {
        open.push_back(frame);
      } else {
        EXPECT_TRUE(!open.empty() && open.back() == frame) << "closing " << frame.text() << " not open";
        if (!open.empty()) open.pop_back();
      }
    }
    close_stretch(p["endValue"].get<double>());
  }
  return out;
}

// Whether speedscope read our frames `o` (our sym and dso) as `theirs`: each
// the same name and file, or where our dso holds a space, the same text
// (above; `spaced` counts those).
// `demangled`: frames whose name we print mangled (our demangler, like
// c++filt, refuses some, e.g. a conversion operator template's
// `_ZNK...cvNS0_14ParamGeneratorIT_EEIS5_EEv` of GoogleTest) and speedscope,
// which demangles the names it imports, shows demangled: the same frame.
bool same_stack(const Stack& o, const Stack& theirs, size_t& spaced, size_t& demangled) {
  if (o.size() != theirs.size()) return false;
  for (size_t i = 0; i < o.size(); i++) {
    if (o[i].file.find(' ') != std::string::npos) {
      if (theirs[i].text() != o[i].text()) return false;
      spaced++;
      continue;
    }
    if (o[i].name.starts_with("_Z") && theirs[i].file == o[i].file && theirs[i].name != o[i].name &&
        !theirs[i].name.starts_with("_Z")) {
      demangled++;
      continue;
    }
    const Frame named{o[i].name == "[unknown]" ? "??? (" + o[i].file + ")" : o[i].name, o[i].file};
    if (theirs[i] != named) return false;
  }
  return true;
}

std::string show(const Stack& s) {
  std::string t;
  for (const Frame& f : s) t += (t.empty() ? "" : ";") + f.text();
  return t;
}

class SpeedscopePeerTest : public testing::WorkloadRecordingTest<SpeedscopePeerTest> {
 protected:
  static void SetUpTestSuite() {
    g = new testing::WorkloadRecording;
    g->record_workload(kBin, {.workload_args = {"--programs", "10", "--lifetime", "50ms,100ms",
                                                "--subprog-programs", "2", "--long-lived", "600ms"},
                              .truth = false});
  }
};

TEST_F(SpeedscopePeerTest, StacksSpeedscopeReadsEqualOurs) {
  if (testing::run({"sh", "-c", "command -v node"}).exit_code != 0) {
    BPFPROF_KERNEL_SKIP("node is not installed (the machine's Node.js runs speedscope's driver)");
  }
  if (::access((kDriverDir + "/node_modules/speedscope/dist/release/index.html").c_str(), R_OK) != 0 ||
      ::access((kDriverDir + "/node_modules/playwright-core/package.json").c_str(), R_OK) != 0) {
    BPFPROF_KERNEL_SKIP("speedscope is not installed in " + kDriverDir +
                        "/node_modules (scripts/install-deps.sh installs it)");
  }
  if (::access(kChromium, X_OK) != 0) {
    BPFPROF_KERNEL_SKIP(std::string("no ") + kChromium + " (scripts/install-deps.sh installs it)");
  }

  testing::RunResult text = testing::run({kBin + "/bpfprof", "script", "-q", "-i", g->data});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const std::string text_path = g->dir.file("script.txt");  // a name that says nothing of the format
  std::ofstream(text_path) << text.out;
  testing::RunResult json = testing::run({kBin + "/bpfprof", "script", "-q", "-i", g->data, "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;

  const std::string exported = g->dir.file("speedscope.json");
  const auto t0 = std::chrono::steady_clock::now();
  testing::RunResult imported = testing::run({"timeout", "180", "node", kDriverDir + "/import.mjs",
                                              text_path, exported, g->dir.file("chromium-profile")});
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(imported.exit_code, 0) << imported.out << imported.err;
  // speedscope recognised the text as perf script's by its content.
  EXPECT_NE(imported.out.find("speedscope console: Importing from linux perf script output"),
            std::string::npos)
      << imported.out;
  const auto file = nlohmann::json::parse(testing::read_file_text(exported));
  const auto pinned = nlohmann::json::parse(testing::read_file_text(kDriverDir + "/package.json"));
  EXPECT_EQ(file["exporter"], "speedscope@" + pinned["dependencies"]["speedscope"].get<std::string>());

  size_t samples = 0;
  const Profiles ours = ours_from_json(json.out, samples);
  const Profiles theirs = speedscope_from_export(file);
  EXPECT_GT(samples, 1000u);

  size_t stretches = 0, bpf_stretches = 0, mismatches = 0, spaced = 0, demangled = 0;
  std::map<std::string, size_t> distinct;
  for (const auto& [name, mine] : ours) {
    stretches += mine.size();
    auto it = theirs.find(name);
    if (it == theirs.end()) {
      ADD_FAILURE() << "speedscope has no profile \"" << name << "\" (" << mine.size() << " stretches)";
      continue;
    }
    const std::vector<Stretch>& other = it->second;
    EXPECT_EQ(other.size(), mine.size()) << name;
    for (size_t i = 0; i < std::min(mine.size(), other.size()); i++) {
      distinct[show(mine[i].stack)]++;
      if (!mine[i].stack.empty() && mine[i].stack.back().file == "[bpf]") bpf_stretches++;
      const bool same = same_stack(mine[i].stack, other[i].stack, spaced, demangled) &&
                        std::abs(other[i].weight - mine[i].weight) <= 1e-9;
      if (!same && mismatches++ < 10) {
        ADD_FAILURE() << name << " stretch " << i << " (" << mine[i].samples << " samples):\n  ours       "
                      << show(mine[i].stack) << " weight " << mine[i].weight << "\n  speedscope "
                      << show(other[i].stack) << " weight " << other[i].weight;
      }
    }
  }
  for (const auto& [name, other] : theirs) {
    EXPECT_TRUE(ours.contains(name)) << "speedscope has a profile we do not: \"" << name << "\"";
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_GT(bpf_stretches, 0u) << "no stack with a BPF leaf";
  std::printf(
      "speedscope (%s) read %zu samples of %zu threads in %.1f s: %zu stretches, %zu "
      "distinct stacks, %zu with a BPF leaf, %zu frames of a dso with a space, %zu names "
      "we left mangled and speedscope demangled; %zu differ\n",
      file["exporter"].get<std::string>().c_str(), samples, ours.size(), secs, stretches,
      distinct.size(), bpf_stretches, spaced, demangled, mismatches);
}

}  // namespace
}  // namespace bpfprof::script
