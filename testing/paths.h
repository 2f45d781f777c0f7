// SPDX-License-Identifier: Apache-2.0
// Paths of the source and build trees that tests read or run (docs, golden
// files, BPF objects, the built binaries). Each test target defines those it
// uses in a source CMake generates for it (bpfprof_test_paths in
// CMakeLists.txt), not as -D flags: a path in a compile command differs from
// clone to clone, so the compiler cache missed every source of such a target
// in a fresh clone, as CI makes for each run.
#pragma once

namespace bpfprof::testing {

extern const char* const kBinDir;            // the tree's bin/: bpfprof, bpfprof-workload
extern const char* const kSourceDir;         // the source tree's root
extern const char* const kDocsDir;           // generated man pages and completions
extern const char* const kCostDoc;           // docs/cost.md
extern const char* const kDiagnosticsDoc;    // docs/diagnostics.md
extern const char* const kGoldenDir;         // tests/golden
extern const char* const kGoldenGen;         // bpfprof_golden_gen
extern const char* const kWorkloadBin;       // bpfprof-workload
extern const char* const kQueryProgsObj;     // src/bpf's test programs, built
extern const char* const kMetadataProgsObj;  // src/bpf's bpf_metadata_* programs, built
extern const char* const kLinesProgsObj;     // src/symbols' line-info programs, built
extern const char* const kLinesProgsSrc;     // ... and their C source

}  // namespace bpfprof::testing

#define BPFPROF_BIN_DIR (::bpfprof::testing::kBinDir)
#define BPFPROF_SOURCE_DIR (::bpfprof::testing::kSourceDir)
#define BPFPROF_DOCS_DIR (::bpfprof::testing::kDocsDir)
#define BPFPROF_COST_DOC (::bpfprof::testing::kCostDoc)
#define BPFPROF_DIAGNOSTICS_DOC (::bpfprof::testing::kDiagnosticsDoc)
#define BPFPROF_GOLDEN_DIR (::bpfprof::testing::kGoldenDir)
#define BPFPROF_GOLDEN_GEN (::bpfprof::testing::kGoldenGen)
#define BPFPROF_WORKLOAD_BIN (::bpfprof::testing::kWorkloadBin)
#define BPFPROF_QUERY_PROGS_OBJ (::bpfprof::testing::kQueryProgsObj)
#define BPFPROF_METADATA_PROGS_OBJ (::bpfprof::testing::kMetadataProgsObj)
#define BPFPROF_LINES_PROGS_OBJ (::bpfprof::testing::kLinesProgsObj)
#define BPFPROF_LINES_PROGS_SRC (::bpfprof::testing::kLinesProgsSrc)
