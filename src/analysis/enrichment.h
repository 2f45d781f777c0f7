// SPDX-License-Identifier: Apache-2.0
// The enrichment header and per-program run statistics of a report, from
// bpfprof's feature sections 251 and 252 (absent in perf's files: then the
// report shows neither).
#pragma once

#include "analysis/report_data.h"
#include "perfdata/features.h"

namespace bpfprof::analysis {

// Fills data.enrichment and the programs' run_cnt/run_time_ns (matched by id).
void add_enrichment(const perfdata::Features& features, ReportData& data);

}  // namespace bpfprof::analysis
