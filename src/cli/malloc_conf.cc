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
//
// narenas:1: one arena for every thread. By default each of a report's
// threads (pass 1's halves, script's window workers, the kallsyms decoder)
// gets its own arena, and memory one of them frees is not reused by the
// next: every phase touches fresh pages, each a fault (or a 2 MiB page to
// zero). One arena reuses them: `script -G` of a 146 MB recording 0.146 ->
// 0.133 s (CPU 247 -> 227 ms, peak RSS 60 -> 53 MB), `report` 0.110 ->
// 0.103 s, `report -g` 0.122 -> 0.111 s. The threads are few and allocate
// little in their loops (thread caches serve those), so the arena's lock is
// not contended.
extern "C" {
// NOLINTNEXTLINE: the name jemalloc looks up.
const char* malloc_conf = "narenas:1,thp:always,metadata_thp:always";
}
