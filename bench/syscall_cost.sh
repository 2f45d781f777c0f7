#!/usr/bin/env bash
# What a recording costs every other process's system calls (run by hand,
# as root; not a test): ns per getppid() of `perf bench syscall basic`, and
# ns per BPF_PROG_TEST_RUN (repeat 1, a trivial program) and per
# BPF_PROG_LOAD + close of it (bin/bpfprof-bpf-call-cost, one process timing
# many calls), without recording, under `perf record -a`, and under
# `bpfprof record -a` with each enrichment path. The in-kernel capture
# attaches to the bpf syscall's tracepoints; an attached syscall tracepoint
# sends every task through the kernel's syscall tracing path, so every
# syscall pays a little, and bpf() calls also run the capture's programs.
# Rounds alternate the configurations so drift on a shared machine spreads
# over all of them; the median per configuration is printed.
#
#   bench/syscall_cost.sh [rounds] [loops] [test runs] [loads]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
loops=${2:-2000000}
runs=${3:-200000}
loads=${4:-2000}
build=${BPFPROF_BUILD_DIR:-build}
bin="$build/bin"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bench() {  # name: appends one figure to each of its three files
  perf bench syscall basic -l "$loops" 2>/dev/null |
    awk '/usecs\/op/ {printf "%.0f\n", $1 * 1000}' >>"$work/$1.ns"
  "$bin/bpfprof-bpf-call-cost" "$runs" "$loads" >"$work/$1.bpf"
  awk '/^test_run_ns/ {print $2}' "$work/$1.bpf" >>"$work/$1.run"
  awk '/^load_ns/ {print $2}' "$work/$1.bpf" >>"$work/$1.load"
}

# Runs the benchmarks while `cmd` records; waits until the recorder is ready.
under() {  # name, recorder command...
  local name=$1
  shift
  "$@" >"$work/$name.out" 2>&1 &
  local rec=$!
  sleep 1.5
  bench "$name"
  kill -INT "$rec"
  # perf record stopped by SIGINT exits 130, bpfprof record 0.
  local rc=0
  wait "$rec" || rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 130 ]; then
    echo "$name: the recorder exited $rc:" >&2
    cat "$work/$name.out" >&2
    exit 1
  fi
}

for ((i = 0; i < rounds; i++)); do
  bench none
  under perf perf record -a -F 999 -q -o "$work/perf.data"
  under bpfprof "$bin/bpfprof" record -a -F 999 -q -o "$work/bpfprof.data"
  under bpfprof-user "$bin/bpfprof" record -a -F 999 -q --enrich user -o "$work/user.data"
done

median() { sort -n "$1" | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
printf '%d rounds: getppid x %d, BPF_PROG_TEST_RUN x %d, BPF_PROG_LOAD x %d; medians, ns/call\n' \
  "$rounds" "$loops" "$runs" "$loads"
printf '%-34s %8s %6s %8s %6s %8s %6s\n' recording getppid vs.0 test_run vs.0 load vs.0
for name in none perf bpfprof bpfprof-user; do
  line=""
  for what in ns run load; do
    m=$(median "$work/$name.$what")
    base=$(median "$work/none.$what")
    line+=$(printf ' %8d %+6d' "$m" "$((m - base))")
  done
  case $name in
    none) label="no recording" ;;
    perf) label="perf record -a -F 999" ;;
    bpfprof) label="bpfprof record -a (in-kernel)" ;;
    bpfprof-user) label="bpfprof record -a --enrich user" ;;
  esac
  printf '%-34s%s\n' "$label" "$line"
done
