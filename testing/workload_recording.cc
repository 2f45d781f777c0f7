// SPDX-License-Identifier: Apache-2.0
#include "testing/workload_recording.h"

#include <fstream>

namespace bpfprof::testing {

bool WorkloadRecording::bpf_allowed(const std::string& bin_dir) {
  if (!bpf_checked_) {
    skip_reason = bpf_refusal(bin_dir);
    bpf_checked_ = true;
  }
  return skip_reason.empty();
}

bool WorkloadRecording::record_workload(const std::string& bin_dir, const WorkloadRun& what) {
  data = dir.file(what.data_name);
  with_truth = what.truth;
  if (with_truth) truth = dir.file("truth.json");
  if (!bpf_allowed(bin_dir)) return false;

  std::vector<std::string> argv = {what.perf_record ? "perf" : bin_dir + "/bpfprof", "record"};
  argv.insert(argv.end(), what.record_flags.begin(), what.record_flags.end());
  argv.insert(argv.end(), {"-o", data, "--", bin_dir + "/bpfprof-workload"});
  argv.insert(argv.end(), what.workload_args.begin(), what.workload_args.end());
  if (with_truth) argv.insert(argv.end(), {"--truth", truth});
  argv.push_back("--quiet");
  record = run(argv);
  if (record.exit_code == 2 && record.err.find("ermission") != std::string::npos) {
    skip_reason = "recording refused: " + record.err;
    return false;
  }
  EXPECT_EQ(record.exit_code, 0) << record.err;
  if (record.exit_code != 0) return false;
  if (with_truth) {
    std::ifstream in(truth);
    truth_json = nlohmann::json::parse(in, nullptr, false);
    programs = read_truth(truth);
  }
  return true;
}

const nlohmann::json& WorkloadRecording::long_lived() const {
  static const nlohmann::json none;
  if (!truth_json.is_object() || !truth_json.contains("programs")) return none;
  for (const auto& p : truth_json.at("programs")) {
    if (p.is_object() && p.value("kind", std::string()) == "long-lived") return p;
  }
  return none;
}

}  // namespace bpfprof::testing
