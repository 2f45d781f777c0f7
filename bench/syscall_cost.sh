#!/usr/bin/env bash
# What a recording costs every other process's system calls (run by hand,
# as root; not a test): ns per getppid() of `perf bench syscall basic`, and
# ns per call of five bpf() commands (bin/bpfprof-bpf-call-cost, one
# process timing many calls: BPF_MAP_LOOKUP_ELEM, BPF_MAP_UPDATE_ELEM,
# BPF_PROG_TEST_RUN, BPF_OBJ_GET_INFO_BY_FD, BPF_PROG_LOAD + close), without
# recording, under `perf record -a`, and under `bpfprof record -a` with each
# enrichment path. The in-kernel capture attaches to the bpf syscall's
# tracepoints; an attached syscall tracepoint sends every task through the
# kernel's syscall tracing path, so every syscall pays a little, and bpf()
# calls also run the capture's programs.
# Rounds alternate the configurations so drift on a shared machine spreads
# over all of them; the median per configuration is printed, and its
# difference to the median without recording.
#
#   bench/syscall_cost.sh [rounds] [loops] [calls] [loads]
#
# BPFPROF_COST_CONFIGS lists the configurations (default "none perf floor
# bpfprof bpfprof-user"). "floor" attaches a program that returns at once to
# each of sys_enter_bpf and sys_exit_bpf (bpfprof-bpf-call-cost does, with
# BPFPROF_COST_FLOOR): the price of the kernel's path alone. "exitfloor"
# attaches one to sys_exit_bpf alone, where the capture attaches its
# program (BPFPROF_COST_EXIT_FLOOR). "rawfloor"
# attaches the same programs to the raw tracepoints sys_enter and sys_exit
# instead (BPFPROF_COST_RAW_FLOOR), which run on every system call. In both,
# the programs are attached only while the bpf() commands are timed, not
# while getppid() is. With
# BPFPROF_BEFORE naming another bpfprof binary, the configuration "before"
# records with it (`bpfprof record -a`), so two versions of the capture are
# compared in the same rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
loops=${2:-500000}
calls=${3:-100000}
loads=${4:-2000}
build=${BPFPROF_BUILD_DIR:-build}
bin="$build/bin"
configs=${BPFPROF_COST_CONFIGS:-none perf floor bpfprof bpfprof-user}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
commands="map_lookup map_update test_run get_info load"

# The two tracepoints' ids, read from tracefs mounted in a private mount
# namespace (the host's mount table is left as it was).
tracepoint_ids() {
  unshare -m sh -c 'mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
    d=/sys/kernel/tracing/events/syscalls
    echo "$(cat $d/sys_enter_bpf/id) $(cat $d/sys_exit_bpf/id)"'
}
case " $configs " in *" floor "* | *" exitfloor "*) floor_ids=$(tracepoint_ids) ;; esac

bench() {  # name: appends one figure per measure to its file
  perf bench syscall basic -l "$loops" 2>/dev/null |
    awk '/usecs\/op/ {printf "%.0f\n", $1 * 1000}' >>"$work/$1.getppid"
  if [ "$1" = floor ]; then
    BPFPROF_COST_FLOOR=$floor_ids "$bin/bpfprof-bpf-call-cost" "$calls" "$loads" >"$work/$1.bpf"
  elif [ "$1" = exitfloor ]; then
    BPFPROF_COST_EXIT_FLOOR=${floor_ids#* } "$bin/bpfprof-bpf-call-cost" "$calls" "$loads" >"$work/$1.bpf"
  elif [ "$1" = rawfloor ]; then
    BPFPROF_COST_RAW_FLOOR=1 "$bin/bpfprof-bpf-call-cost" "$calls" "$loads" >"$work/$1.bpf"
  else
    "$bin/bpfprof-bpf-call-cost" "$calls" "$loads" >"$work/$1.bpf"
  fi
  for c in $commands; do
    awk -v k="${c}_ns" '$1 == k {print $2}' "$work/$1.bpf" >>"$work/$1.$c"
  done
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

reversed=$(echo "$configs" | tr ' ' '\n' | tac | tr '\n' ' ')
for ((i = 0; i < rounds; i++)); do
  # Odd rounds run the configurations in reverse, so none always follows
  # (or precedes) the same one.
  order=$configs
  [ $((i % 2)) -eq 1 ] && order=$reversed
  for name in $order; do
    case $name in
      none) bench none ;;
      floor) bench floor ;;
      rawfloor) bench rawfloor ;;
      exitfloor) bench exitfloor ;;
      perf) under perf perf record -a -F 999 -q -o "$work/perf.data" ;;
      bpfprof) under bpfprof "$bin/bpfprof" record -a -F 999 -q -o "$work/bpfprof.data" ;;
      bpfprof-user)
        under bpfprof-user "$bin/bpfprof" record -a -F 999 -q --enrich user -o "$work/user.data" ;;
      before) under before "$BPFPROF_BEFORE" record -a -F 999 -q -o "$work/before.data" ;;
      *) echo "unknown configuration $name" >&2; exit 2 ;;
    esac
  done
done

median() { sort -n "$1" | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
label() {
  case $1 in
    none) echo "no recording" ;;
    floor) echo "two programs returning at once" ;;
    rawfloor) echo "the same on the raw sys_enter/sys_exit" ;;
    exitfloor) echo "one program on sys_exit_bpf alone" ;;
    perf) echo "perf record -a -F 999" ;;
    bpfprof) echo "bpfprof record -a (in-kernel)" ;;
    bpfprof-user) echo "bpfprof record -a --enrich user" ;;
    before) echo "bpfprof record -a, $BPFPROF_BEFORE" ;;
  esac
}
printf '%d rounds, load %s: getppid x %d, bpf() commands x %d, BPF_PROG_LOAD x %d; medians, ns/call\n' \
  "$rounds" "$(cut -d' ' -f1-3 /proc/loadavg)" "$loops" "$calls" "$loads"
for what in getppid $commands; do
  printf '\n%-40s %8s %7s\n' "$what" ns/call vs.none
  base=$(median "$work/none.$what")
  for name in $configs; do
    m=$(median "$work/$name.$what")
    printf '%-40s %8d %+7d\n' "$(label "$name")" "$m" "$((m - base))"
  done
done
