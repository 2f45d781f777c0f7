// SPDX-License-Identifier: Apache-2.0
// The bpfprof binary's allocator settings, read by jemalloc at its first
// allocation (MALLOC_CONF in the environment still overrides them).
//
// Every page of memory bpfprof touches for the first time is a page fault,
// and on the paravirtualized machines it runs on a fault costs ~11 us
// (64 MiB touched page by page: 0.185 s; in 2 MiB huge pages: 0.004 s).
// Reading a recording touches tens of MB (the kallsyms snapshot decoded,
// windows of records, the text of their lines, symbol tables): on a 137 MB
// recording, `script -G` took 9,400 faults in 4 KiB pages, 3,200 here, and
// its wall time went from 0.15 to 0.10 s; the report of a 1 s recording
// from 0.05 to 0.02 s. Huge pages cost resident memory (about 20 MB more on
// those runs), well below what perf takes for the same files.
//
// thp:always asks for huge pages on every mapping jemalloc makes (the
// system's "madvise" mode grants them to exactly those); metadata_thp its
// own tables too. Where the system's transparent huge pages are "never",
// both are no-ops.
extern "C" {
// NOLINTNEXTLINE: the name jemalloc looks up.
const char* malloc_conf = "thp:always,metadata_thp:always";
}
