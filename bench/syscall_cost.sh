#!/usr/bin/env bash
# What a recording costs every other process's system calls (run by hand,
# as root; not a test): ns per getppid() of `perf bench syscall basic`
# without recording, under `perf record -a`, and under `bpfprof record -a`
# with each enrichment path. The in-kernel capture attaches to the bpf
# syscall's tracepoints; an attached syscall tracepoint sends every task
# through the kernel's syscall tracing path, so every syscall pays a little.
# Rounds alternate the configurations so drift on a shared machine spreads
# over all of them; the median per configuration is printed.
#
#   bench/syscall_cost.sh [rounds] [loops]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
loops=${2:-2000000}
build=${BPFPROF_BUILD_DIR:-build}
bin="$build/bin"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bench() { perf bench syscall basic -l "$loops" 2>/dev/null | awk '/usecs\/op/ {printf "%.0f\n", $1 * 1000}'; }

# Runs the benchmark while `cmd` records; waits until the recorder is ready.
under() {  # name, recorder command...
  local name=$1
  shift
  "$@" >"$work/$name.out" 2>&1 &
  local rec=$!
  sleep 1.5
  bench >>"$work/$name.ns"
  kill -INT "$rec"
  wait "$rec" || true
}

for ((i = 0; i < rounds; i++)); do
  bench >>"$work/none.ns"
  under perf perf record -a -F 999 -q -o "$work/perf.data"
  under bpfprof "$bin/bpfprof" record -a -F 999 -q -o "$work/bpfprof.data"
  under bpfprof-user "$bin/bpfprof" record -a -F 999 -q --enrich user -o "$work/user.data"
done

median() { sort -n "$1" | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
base=$(median "$work/none.ns")
printf '%-34s %8s %8s   (%d rounds of %d getppid calls; median)\n' recording ns/call vs.none "$rounds" "$loops"
for name in none perf bpfprof bpfprof-user; do
  m=$(median "$work/$name.ns")
  label=$name
  case $name in
    none) label="no recording" ;;
    perf) label="perf record -a -F 999" ;;
    bpfprof) label="bpfprof record -a (in-kernel)" ;;
    bpfprof-user) label="bpfprof record -a --enrich user" ;;
  esac
  printf '%-34s %8d %+7d\n' "$label" "$m" "$((m - base))"
done
