#!/usr/bin/env bash
# Whole-process comparison of the readers (run by hand, as root; not a test):
# one recording of at least a million samples with callchains, read by
# `bpfprof report` / `bpfprof script` and by `perf report` / `perf script` in
# comparable modes. Wall time and peak RSS of each, ratios from one run.
#
#   bench/report_speed.sh [seconds] [freq]      (default 33 s at 20000 Hz on 2 CPUs: ~1M samples)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-33}
freq=${2:-20000}
build=${BPFPROF_BUILD_DIR:-build}
bin="$build/bin"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data="$work/big.data"

"$bin/bpfprof-workload" --programs $((secs * 20)) --lifetime 50ms --threads 2 --subprog-programs 4 \
  --long-lived "$((secs + 1))s" --quiet &
wl=$!
sleep 0.3
"$bin/bpfprof" record -a -g -F "$freq" -e cpu-clock -q -o "$data" -- sleep "$secs"
wait "$wl"
samples=$("$bin/bpfprof" report -i "$data" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["samples"])')
echo "recording: $samples samples with callchains, $(($(stat -c %s "$data") / 1000000)) MB"

measure() {  # label, command... -> "seconds maxrss_kb"; CPU seconds too (the machine may be shared)
  local label=$1
  shift
  /usr/bin/time -f '%e %M %U %S' -o "$work/t" "$@" >/dev/null 2>"$work/err" || { cat "$work/err"; exit 1; }
  read -r secs_ rss user sys <"$work/t"
  printf '%-48s %8.2f s %8.0f MB %8.2f s\n' "$label" "$secs_" "$((rss / 1024))" \
    "$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')"
  eval "${label//[^a-z]/_}_t=$secs_ ${label//[^a-z]/_}_m=$rss"
}

uptime
printf '%-48s %10s %11s %10s\n' "" "wall" "peak RSS" "CPU"
measure "perf report --stdio" perf report -i "$data" --stdio
measure "bpfprof report -g" "$bin/bpfprof" report -i "$data" -g
measure "perf report --stdio --no-children --sort sym" perf report -i "$data" --stdio --no-children --sort sym
measure "bpfprof report" "$bin/bpfprof" report -i "$data" --sort sym
# bpfprof script prints the leaf frame only: perf's comparable mode hides the
# callchain (-G). Plain `perf script` prints every frame (several times the
# text): shown for reference, not compared.
measure "perf script -G" perf script -G -i "$data"
measure "perf script (all frames, reference)" perf script -i "$data"
measure "bpfprof script" "$bin/bpfprof" script -i "$data"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", (b > 0 ? a / b : 0) }'; }
echo
echo "speed (perf time / bpfprof time):  report -g vs --stdio $(ratio "$perf_report___stdio_t" "$bpfprof_report__g_t"),"\
     "flat report $(ratio "$perf_report___stdio___no_children___sort_sym_t" "$bpfprof_report_t"),"\
     "script vs script -G $(ratio "$perf_script____t" "$bpfprof_script_t")"
echo "memory (bpfprof / perf peak RSS): report -g $(ratio "$bpfprof_report__g_m" "$perf_report___stdio_m"),"\
     "flat report $(ratio "$bpfprof_report_m" "$perf_report___stdio___no_children___sort_sym_m"),"\
     "script $(ratio "$bpfprof_script_m" "$perf_script____m")"
