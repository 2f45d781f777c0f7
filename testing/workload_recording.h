// SPDX-License-Identifier: Apache-2.0
// The workload recorded once per test suite: kernel and peer tests that check
// many things of one `bpfprof record` of bpfprof-workload share it through
// WorkloadRecordingTest. Where this machine cannot record (BPF refused,
// recording refused for permissions) every test skips with the reason
// printed, and fails instead where kernel tests are required.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "testing/recording_readback.h"
#include "testing/subprocess.h"

namespace bpfprof::testing {

// What is recorded: `<recorder> record <record_flags> -o <dir>/<data_name> --
// bpfprof-workload <workload_args> [--truth <dir>/truth.json] --quiet`, the
// recorder being bpfprof, or Linux perf where `perf_record` is set.
struct WorkloadRun {
  std::vector<std::string> record_flags = {"-a", "-g", "-F", "999", "-q"};
  bool perf_record = false;
  std::vector<std::string> workload_args;
  std::string data_name = "rec.data";
  bool truth = true;  // the workload writes its ground truth
};

// One recording in its own temporary directory, and the workload's truth.
struct WorkloadRecording {
  TempDir dir;
  std::string data, truth;  // the perf.data file; the truth file ("" if not asked for)
  RunResult record;         // what the recorder said
  std::string skip_reason;  // why this machine cannot record ("" if it can)
  bool with_truth = true;              // WorkloadRun::truth, as recorded
  nlohmann::json truth_json;           // the truth file as written
  std::vector<TruthProgram> programs;  // ... and read by read_truth()

  WorkloadRecording() = default;
  WorkloadRecording(const WorkloadRecording&) = delete;
  WorkloadRecording& operator=(const WorkloadRecording&) = delete;

  // Whether BPF programs can be loaded here (asks bpf_refusal() once); if
  // not, skip_reason says why.
  bool bpf_allowed(const std::string& bin_dir);

  // Records `what` with the binaries in `bin_dir`, then reads the truth; true
  // if it recorded. False with skip_reason set where BPF or the recording is
  // refused here; false with a failure of the calling test (suite) where
  // `bpfprof record` failed otherwise.
  bool record_workload(const std::string& bin_dir, const WorkloadRun& what);

  // The truth's long-lived program (null if there is none).
  const nlohmann::json& long_lived() const;

 private:
  bool bpf_checked_ = false;
};

// The gtest fixture of a suite over one recording, or over several. `Suite`
// derives from WorkloadRecordingTest<Suite, State>; State is WorkloadRecording
// or a struct derived from it that keeps what the suite reads back, or a
// struct with an array `runs` of those. Suite::SetUpTestSuite sets
// `g = new State` and calls record_workload() on each recording; each test
// then skips (printed reason) where one could not record, and fails where a
// workload wrote no truth.
template <typename Suite, typename State = WorkloadRecording>
class WorkloadRecordingTest : public ::testing::Test {
 protected:
  static void TearDownTestSuite() {
    delete g;
    g = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(g, nullptr);
    if constexpr (requires { g->runs; }) {
      for (const WorkloadRecording& r : g->runs) {
        check_recorded(r);
        if (IsSkipped() || HasFatalFailure()) return;
      }
    } else {
      check_recorded(*g);
    }
  }

  static inline State* g = nullptr;

 private:
  static void check_recorded(const WorkloadRecording& r) {
    if (!r.skip_reason.empty()) BPFPROF_KERNEL_SKIP(r.skip_reason);
    if (r.with_truth) {
      ASSERT_FALSE(r.programs.empty()) << "no workload truth; record stderr: " << r.record.err;
    }
  }
};

}  // namespace bpfprof::testing
