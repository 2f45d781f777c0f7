#!/usr/bin/env bash
# Where a recorder's CPU goes, per thread (run by hand, as root; not a test):
# the record_overhead.sh workload (churn of <rate> program loads/s) recorded by
# `bpfprof record` (or `perf record` with RECORDER=perf) while
# /proc/PID/task/*/{stat,status} are read every 0.2 s; each thread's last
# utime/stime, scheduling policy (1 = SCHED_FIFO: an enricher thread), minor
# faults and context switches are printed. Threads are read until they exit,
# so the last 0.2 s of each and the file's close are missing: the process
# line (/usr/bin/time) is the whole. BPFPROF_FLAGS adds flags to
# `bpfprof record` (e.g. "--enricher-sched nice").
#
#   bench/thread_cpu.sh [seconds] [loads-per-second] [freq]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BPFPROF_BUILD_DIR:-build}
secs=${1:-10}; rate=${2:-100}; freq=${3:-20000}
bin=$build/bin
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
programs=$((secs*rate+rate))
rf=(--rate "$rate"); [ "$rate" -gt 0 ] || rf=()
"$bin/bpfprof-workload" --programs "$programs" --lifetime 5ms "${rf[@]}" --threads 2 \
  --subprog-programs "$((rate > 0 ? 4 : 0))" --long-lived "$((secs + 2))s" --quiet --truth $work/t.json &
wl=$!
sleep 0.5
rec=${RECORDER:-bpfprof}
if [ "$rec" = perf ]; then
  /usr/bin/time -f '%U %S %M' -o $work/time perf record -a -g -F $freq -e cpu-clock -q -o $work/b.data -- sleep $secs &
else
  /usr/bin/time -f '%U %S %M' -o $work/time "$bin/bpfprof" record ${BPFPROF_FLAGS:-} -a -g -F $freq -e cpu-clock -q -o $work/b.data -- sleep $secs &
fi
tp=$!
sleep 0.2
pid=$(pgrep -P $tp)
declare -A last pol csw flt
while kill -0 $pid 2>/dev/null; do
  for f in /proc/$pid/task/*/stat; do
    l=$(cat $f 2>/dev/null) || continue
    tid=${f#/proc/$pid/task/}; tid=${tid%/stat}
    set -- ${l#*) }
    # after "comm) ": field 3 is $1; utime=14 -> $12, stime=15 -> $13, policy=41 -> $39
    last[$tid]="${12} ${13}"; pol[$tid]=${39}; flt[$tid]=${8}
    csw[$tid]=$(awk '/voluntary_ctxt_switches/ {printf "%s ", $2}' /proc/$pid/task/$tid/status 2>/dev/null || true)
  done
  sleep 0.2
done
wait $tp; wait $wl
tk=$(getconf CLK_TCK)
for t in "${!last[@]}"; do
  read u s <<<"${last[$t]}"
  role=thread; [ "$t" = "$pid" ] && role=main
  printf "%-8s tid %-7s policy %s user %.2f sys %.2f minflt %s ctxsw vol/invol %s\n" $role $t ${pol[$t]} $(echo "$u/$tk" | bc -l) $(echo "$s/$tk" | bc -l) ${flt[$t]} "${csw[$t]}"
done | sort
echo "process (time): $(cat $work/time)  (user sys maxrssKB)"
echo "samples: $(perf script -i $work/b.data -F ip -G 2>/dev/null | wc -l)"
