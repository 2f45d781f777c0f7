// SPDX-License-Identifier: Apache-2.0
// The loss warning: one line naming every loss-severity diagnostic above
// zero, by input; nothing when only names or notes were counted.
#include "cli/command_common.h"

#include <string>

#include <gtest/gtest.h>

namespace bpfprof::cli {
namespace {

TEST(LossWarning, NamesEveryLossAboveZeroInNameOrderOnOneLine) {
  DiagCounts c;
  c[Diag::kSamplesBad] = 3343;
  c[Diag::kRecordsBad] = 2;
  c[Diag::kCgroupUnknown] = 5;           // unnamed: not a loss
  c[Diag::kSidebandOutOfOrder] = 1;      // note: not a loss
  const InputDiagnostics read[] = {{"perf.data", c}};
  EXPECT_EQ(loss_warning("report", read),
            "bpfprof report: warning: perf.data: 2 records_bad, 3343 samples_bad: part of the "
            "recording could not be used (see the diagnostics of bpfprof report)");
}

TEST(LossWarning, NothingWhenNoLossWasCounted) {
  DiagCounts c;
  for (const DiagInfo& d : kDiagnostics) {
    if (d.severity != DiagInfo::Severity::kLoss) c[d.diag] = 7;
  }
  const InputDiagnostics read[] = {{"perf.data", c}, {"other.data", DiagCounts{}}};
  EXPECT_EQ(loss_warning("report", read), "");
  EXPECT_EQ(loss_warning("merge", {}), "");
}

// Every loss of the table is named: a new one in BPFPROF_DIAGNOSTICS warns
// without more code.
TEST(LossWarning, EveryLossSeverityCounts) {
  for (const DiagInfo& d : kDiagnostics) {
    if (d.severity != DiagInfo::Severity::kLoss) continue;
    DiagCounts c;
    c[d.diag] = 1;
    const InputDiagnostics read[] = {{"x.data", c}};
    EXPECT_EQ(loss_warning("export", read),
              "bpfprof export: warning: x.data: 1 " + std::string(d.name) +
                  ": part of the recording could not be used (see the diagnostics of bpfprof "
                  "report)");
  }
}

// Several recordings (merge, diff): the ones with losses, each named, in
// the order given; stdin by that name.
TEST(LossWarning, NamesTheInputsWithLosses) {
  DiagCounts a, b;
  a[Diag::kRecordsUnknownAttr] = 1;
  b[Diag::kBpfLinksLost] = 4;
  b[Diag::kFeatureSectionsUnreadable] = 1;
  const InputDiagnostics read[] = {{"a.data", a}, {"clean.data", DiagCounts{}}, {"-", b}};
  const std::string line = loss_warning("merge", read);
  EXPECT_EQ(line,
            "bpfprof merge: warning: a.data: 1 records_unknown_attr; stdin: 4 bpf_links_lost, 1 "
            "feature_sections_unreadable: part of the recordings could not be used (see the "
            "diagnostics of bpfprof report)");
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace bpfprof::cli
