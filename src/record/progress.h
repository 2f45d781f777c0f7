// SPDX-License-Identifier: Apache-2.0
// The lines a user sees while and after recording. Formatting only: the CLI
// decides where (and whether) they are printed.
#pragma once

#include <string>

#include "record/drain_loop.h"
#include "record/recorder.h"

namespace bpfprof::record {

// "[ recording: 3.5 s, 12345 samples, 0 lost ]" (a status line, no newline).
std::string format_progress(const Progress& p);
// perf-like summary: "[ bpfprof record: N samples, M lost, K BPF programs (X
// synthesized, Y loaded during recording), Z enriched, W gone before
// enrichment; wrote out.data (S MB) ]".
std::string format_summary(const RecordStats& s);
// "enrichment: N programs, G gone first; T threads (SCHED_FIFO), median/max
// hold time X/Y µs".
std::string format_enrichment(const EnrichmentStats& e);

}  // namespace bpfprof::record
