#!/usr/bin/env bash
# What the capture's programs themselves cost per bpf() call, apart from
# the kernel's path that runs them (run by hand, as root; not a test). With
# kernel.bpf_stats_enabled=1, each of the five commands of
# bin/bpfprof-bpf-call-cost is timed alone under `bpfprof record -a`, and the
# kernel's run_time_ns / run_cnt of capture_enter and capture_exit over those
# calls is printed (median over the rounds; capture_enter is 0 since the
# capture decides at the exit alone, and is kept for BPFPROF_BEFORE builds). "floor" is the same for two
# programs that return at once: with the statistics on, every run also pays
# the two clock reads that measure it, which is most of the floor's figure.
# The ns per call of the timed loop is printed too, but the statistics make
# every run dearer: bench/syscall_cost.sh gives the costs without them.
#
#   bench/capture_prog_cost.sh [rounds] [calls] [loads]
#
# BPFPROF_BEFORE names another bpfprof binary measured in the same rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
calls=${2:-20000}
loads=${3:-500}
build=${BPFPROF_BUILD_DIR:-build}
bin="$build/bin"
work=$(mktemp -d)
was=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -q kernel.bpf_stats_enabled="$was"; rm -rf "$work"' EXIT
sysctl -q kernel.bpf_stats_enabled=1
commands="map_lookup map_update test_run get_info load"
configs="floor bpfprof"
[ -n "${BPFPROF_BEFORE:-}" ] && configs="floor before bpfprof"
ids=$(unshare -m sh -c 'mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
  d=/sys/kernel/tracing/events/syscalls
  echo "$(cat $d/sys_enter_bpf/id) $(cat $d/sys_exit_bpf/id)"')

# "<name> <run_cnt> <run_time_ns>" of the capture programs not in $1.
capture_stats() {
  bpftool prog show -j | python3 -c '
import json, sys
old = set(sys.argv[1].split())
for p in json.load(sys.stdin):
    if p.get("name") in ("capture_enter", "capture_exit") and str(p["id"]) not in old:
        print(p["name"], p.get("run_cnt", 0), p.get("run_time_ns", 0))' "$1"
}
capture_ids() {
  bpftool prog show -j | python3 -c '
import json, sys
print(" ".join(str(p["id"]) for p in json.load(sys.stdin)
               if p.get("name") in ("capture_enter", "capture_exit")))'
}

one() {  # config, command: appends "<ns/call> <enter ns/run> <exit ns/run>"
  local config=$1 c=$2 out
  if [ "$config" = floor ]; then
    out=$(BPFPROF_COST_FLOOR=$ids "$bin/bpfprof-bpf-call-cost" "$calls" "$loads" 1 "$c")
    echo "$out" | awk -v k="${c}_ns" '
      $1 == k {ns = $2} $1 == "floor_enter_runs" {e = $3 / $2} $1 == "floor_exit_runs" {x = $3 / $2}
      END {printf "%d %d %d\n", ns, e, x}' >>"$work/$config.$c"
    return
  fi
  local rec_bin="$bin/bpfprof"
  [ "$config" = before ] && rec_bin=$BPFPROF_BEFORE
  local old
  old=$(capture_ids)
  "$rec_bin" record -a -F 999 -q -o "$work/rec.data" >"$work/rec.out" 2>&1 &
  local rec=$!
  sleep 1.5
  capture_stats "$old" >"$work/s0"
  out=$("$bin/bpfprof-bpf-call-cost" "$calls" "$loads" 1 "$c")
  capture_stats "$old" >"$work/s1"
  kill -INT "$rec"
  wait "$rec" || { cat "$work/rec.out" >&2; exit 1; }
  local ns
  ns=$(echo "$out" | awk -v k="${c}_ns" '$1 == k {print $2}')
  paste "$work/s0" "$work/s1" | awk -v ns="$ns" '
    {r[$1] = ($6 - $3) / ($5 - $2)}
    END {printf "%d %d %d\n", ns, r["capture_enter"], r["capture_exit"]}' >>"$work/$config.$c"
}

for ((i = 0; i < rounds; i++)); do
  for c in $commands; do
    for config in $configs; do one "$config" "$c"; done
  done
done

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
printf '%d rounds, load %s, kernel.bpf_stats_enabled=1: x %d per command (BPF_PROG_LOAD x %d); medians\n' \
  "$rounds" "$(cut -d' ' -f1-3 /proc/loadavg)" "$calls" "$loads"
for c in $commands; do
  printf '\n%-28s %10s %12s %12s\n' "$c" "ns/call" "enter ns/run" "exit ns/run"
  for config in $configs; do
    f="$work/$config.$c"
    printf '%-28s %10d %12d %12d\n' "$config" "$(cut -d' ' -f1 "$f" | median)" \
      "$(cut -d' ' -f2 "$f" | median)" "$(cut -d' ' -f3 "$f" | median)"
  done
done
