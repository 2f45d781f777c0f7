#!/usr/bin/env bash
# Whole-process comparison of the recorders (run by hand, as root; not a test):
# the same BPF workload — a long-lived program plus churn of program loads —
# recorded system-wide by `bpfprof record` and by `perf record` with the same
# flags. Reports each recorder's own CPU seconds per million samples, lost
# records, and file sizes, as ratios from one run.
#
#   bench/record_overhead.sh [seconds] [freq] [loads-per-second]
# BPFPROF_FLAGS: extra flags for bpfprof record (e.g. "--enrich user").
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
freq=${2:-20000}
rate=${3:-100}
build=${BPFPROF_BUILD_DIR:-build}
bin="$build/bin"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

programs=$((secs * rate + rate))  # rate 0: no churn, only the long-lived program
rate_flag=(--rate "$rate")
[ "$rate" -gt 0 ] || rate_flag=()
# The workload runs outside the recorders so that their CPU time is their own.
start_workload() {
  "$bin/bpfprof-workload" --programs "$programs" --lifetime 5ms "${rate_flag[@]}" --threads 2 \
    --subprog-programs "$((rate > 0 ? 4 : 0))" --long-lived "$((secs + 2))s" --quiet --truth "$work/truth-$1.json" &
  wl=$!
  sleep 0.5
}

# cpu seconds (user+sys) of one recorder process, via /usr/bin/time.
measure() {  # name, command...
  local name=$1
  shift
  /usr/bin/time -f '%U %S %M' -o "$work/$name.time" "$@" >"$work/$name.out" 2>"$work/$name.err"
  read -r user sys maxrss <"$work/$name.time"
  echo "$user $sys $maxrss"
}

count_samples() { perf script -i "$1" -F ip -G 2>/dev/null | wc -l; }
count_lost() {  # LOST + LOST_SAMPLES record counts as perf sees them
  perf report -i "$1" --stats 2>/dev/null | awk '/LOST/ {n += $NF} END {print n + 0}'
}

start_workload perf
read -r pu ps pm < <(measure perf perf record -a -g -F "$freq" -e cpu-clock -o "$work/perf.data" -- sleep "$secs")
wait "$wl"
start_workload bpfprof
read -r bu bs bm < <(measure bpfprof "$bin/bpfprof" record -a -g -F "$freq" -e cpu-clock -q ${BPFPROF_FLAGS:-} -o "$work/bpfprof.data" -- sleep "$secs")
wait "$wl"

ps_n=$(count_samples "$work/perf.data")
bs_n=$(count_samples "$work/bpfprof.data")
pl=$(count_lost "$work/perf.data")
bl=$(count_lost "$work/bpfprof.data")
psize=$(stat -c %s "$work/perf.data")
bsize=$(stat -c %s "$work/bpfprof.data")

awk -v pu="$pu" -v ps="$ps" -v bu="$bu" -v bs="$bs" -v pn="$ps_n" -v bn="$bs_n" \
    -v pl="$pl" -v bl="$bl" -v psz="$psize" -v bsz="$bsize" -v pm="$pm" -v bm="$bm" \
    -v secs="$secs" -v freq="$freq" -v rate="$rate" 'BEGIN {
  pc = (pu + ps) / (pn / 1e6); bc = (bu + bs) / (bn / 1e6)
  printf "record -a -g -F %d -e cpu-clock, %d s, workload churn %d loads/s\n", freq, secs, rate
  printf "%-8s %10s %10s %8s %12s %10s %10s\n", "", "samples", "cpu s", "lost", "cpu s/Msmp", "file MB", "max RSS MB"
  printf "%-8s %10d %10.2f %8d %12.2f %10.1f %10.1f\n", "perf", pn, pu + ps, pl, pc, psz / 1e6, pm / 1024
  printf "%-8s %10d %10.2f %8d %12.2f %10.1f %10.1f\n", "bpfprof", bn, bu + bs, bl, bc, bsz / 1e6, bm / 1024
  printf "ratio bpfprof/perf: cpu per sample %.2f, file size per sample %.2f\n", bc / pc, (bsz / bn) / (psz / pn)
}'
