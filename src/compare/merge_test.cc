// SPDX-License-Identifier: Apache-2.0
// merge's folded stacks of several recordings.
#include "compare/merge.h"

#include <gtest/gtest.h>

#include "testing/sample_report.h"

namespace bpfprof::compare {
namespace {

using bpfprof::testing::make_report;

TEST(PprofMerge, FoldedStacksOfAllRecordings) {
  analysis::ReportData a = make_report(42, "host1"), b = make_report(97, "host2");
  const analysis::ReportData* both[] = {&a, &b};
  EXPECT_EQ(render_folded_merged(both),
            "[unknown] 2\n"
            "bpf_test_run_[k];bpf_prog_0011223344556677_burn_[bpf];"
            "bpf_prog_0011223344556677_sub_[bpf] 4\n"
            "main 8\n"
            "main;bpf_test_run_[k];bpf_prog_0011223344556677_burn_[bpf] 8\n");
}

}  // namespace
}  // namespace bpfprof::compare
