#!/usr/bin/env bash
# Short-lived programs: the share whose full info (JIT image, function
# addresses, line info, BTF) a recording stores, by lifetime, for bpfprof and
# for Linux perf on the same workload (run by hand, as root; not a test).
# bpfprof-workload loads and unloads programs of 100 us, 400 us, 1 ms and
# 10 ms (BPFPROF_LIFETIMES: another list, e.g. 1us,10us,100us) on two threads while a long-lived burner runs on a third, so both
# CPUs of a 2-core machine stay busy; bpfprof-stored-info reads each file
# (ours and perf's alike) against the workload's truth.
#
#   bench/short_lived.sh [runs] [programs-per-class] [recorders]
# recorders: space-separated, from
#   bpfprof        the default: the in-kernel capture at load
#   bpfprof-user   --enrich user: a SCHED_FIFO enricher thread pinned on each CPU
#   bpfprof-one    one SCHED_FIFO enricher thread, unpinned
#   bpfprof-nice   a thread per CPU at SCHED_OTHER nice -20 (where FIFO is refused)
#   bpfprof-other  one SCHED_OTHER thread: how the enricher ran before
#   perf           Linux perf record (its side-band thread)
# Default "bpfprof perf".
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
per_class=${2:-200}
recorders=${3:-bpfprof perf}
build=${BPFPROF_BUILD_DIR:-build}
bin="$build/bin"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

lifetimes=${BPFPROF_LIFETIMES:-100us,400us,1ms,10ms}
classes=$(awk -F, '{print NF}' <<<"$lifetimes")
workload=("$bin/bpfprof-workload" --programs "$((classes * per_class))" --lifetime "$lifetimes"
          --subprog-programs 0 --long-lived 500ms --threads 2 --quiet)

record() {  # recorder, output, truth
  local out=$2 truth=$3
  case $1 in
    bpfprof) "$bin/bpfprof" record -a -g -F 999 -q -o "$out" -- "${workload[@]}" --truth "$truth" ;;
    bpfprof-user) "$bin/bpfprof" record -a -g -F 999 -q --enrich user -o "$out" -- "${workload[@]}" --truth "$truth" ;;
    bpfprof-one) "$bin/bpfprof" record -a -g -F 999 -q --enrich user --enricher-threads one -o "$out" -- "${workload[@]}" --truth "$truth" ;;
    bpfprof-nice) "$bin/bpfprof" record -a -g -F 999 -q --enrich user --enricher-sched nice -o "$out" -- "${workload[@]}" --truth "$truth" ;;
    bpfprof-other) "$bin/bpfprof" record -a -g -F 999 -q --enrich user --enricher-threads one --enricher-sched other -o "$out" -- "${workload[@]}" --truth "$truth" ;;
    perf) perf record -a -g -F 999 -q -o "$out" -- "${workload[@]}" --truth "$truth" >/dev/null 2>&1 ;;
    *) echo "unknown recorder $1" >&2; exit 2 ;;
  esac
}

# One line per (run, recorder, lifetime): "<recorder> <lifetime_ns> <programs> <stored>".
for run in $(seq "$runs"); do
  for r in $recorders; do
    record "$r" "$work/$r.data" "$work/$r.json"
    "$bin/bpfprof-stored-info" "$work/$r.data" "$work/$r.json" | sed "s/^/$r /" | tee -a "$work/all"
    rm -f "$work/$r.data" "$work/$r.json"
  done
  echo "--- run $run done" >&2
done

# Per recorder and lifetime: the total share and the range over runs.
echo
echo "| recorder | lifetime | stored / programs (all runs) | share | per-run range |"
echo "|---|---|---|---|---|"
awk '{ k = $1 " " $2; n[k] += $3; s[k] += $4; p = 100 * $4 / $3
       if (!(k in lo) || p < lo[k]) lo[k] = p; if (!(k in hi) || p > hi[k]) hi[k] = p }
     END { for (k in n) { split(k, a, " ")
             printf "| %s | %g us | %d / %d | %.1f%% | %.1f-%.1f%% |\n", a[1], a[2] / 1000, s[k], n[k],
                    100 * s[k] / n[k], lo[k], hi[k] } }' "$work/all" | sort -t'|' -k2,2 -k3,3n
