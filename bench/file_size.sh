#!/usr/bin/env bash
# File size of a system-wide recording, bpfprof beside perf, for recordings of
# several lengths (run by hand, as root; not a test). Both record the same
# thing the same way, -a -F 99 and the default event (cpu-clock where there is
# no PMU), in three modes: flat (no callchains: bpfprof --no-callchain, perf's
# default), kernel (kernel callchains only: bpfprof's default, perf -g
# --kernel-callchains) and -g (kernel and user), and the last two again with
# -z (zstd level 1 COMPRESSED records, on both sides: kernel-z, -g-z). One
# line per length and mode:
# bytes, samples, bytes per sample, the ratio to perf's, and the bytes each
# sample adds beyond the first length's file (what a longer recording costs
# per sample, the snapshot and synthesis aside).
#
#   bench/file_size.sh [seconds...]      (default 1 10 60)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BPFPROF_BUILD_DIR:-build}
bin="$build/bin"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
lengths=("$@")
[ ${#lengths[@]} -gt 0 ] || lengths=(1 10 60)

samples_of() {  # file -> number of samples, as perf counts them
  perf script -G -i "$1" -F ip 2>/dev/null | wc -l
}

printf '%-6s %-8s %12s %8s %10s %12s %8s %10s %7s %14s\n' length mode bpfprof samples B/sample \
  perf samples B/sample ratio 'added B/sample'
declare -A first_b first_bs first_p first_ps
for secs in "${lengths[@]}"; do
  for mode in flat kernel -g kernel-z -g-z; do
    case $mode in
      flat) ours=(--no-callchain) theirs=() ;;
      kernel) ours=() theirs=(-g --kernel-callchains) ;;
      -g) ours=(-g) theirs=(-g) ;;
      kernel-z) ours=(-z) theirs=(-g --kernel-callchains -z) ;;
      -g-z) ours=(-g -z) theirs=(-g -z) ;;
    esac
    "$bin/bpfprof" record -a -F 99 "${ours[@]}" -q -o "$work/b.data" -- sleep "$secs"
    perf record -a -F 99 "${theirs[@]}" -q -o "$work/p.data" -- sleep "$secs" 2>/dev/null
    b=$(stat -c %s "$work/b.data") p=$(stat -c %s "$work/p.data")
    bs=$(samples_of "$work/b.data") ps=$(samples_of "$work/p.data")
    added=-
    if [ -n "${first_b[$mode]:-}" ] && [ "$bs" -gt "${first_bs[$mode]}" ] && [ "$ps" -gt "${first_ps[$mode]}" ]; then
      added="$(((b - first_b[$mode]) / (bs - first_bs[$mode])))/$(((p - first_p[$mode]) / (ps - first_ps[$mode])))"
    else
      first_b[$mode]=$b first_bs[$mode]=$bs first_p[$mode]=$p first_ps[$mode]=$ps
    fi
    printf '%-6s %-8s %12d %8d %10d %12d %8d %10d %7.2f %14s\n' "${secs}s" "$mode" "$b" "$bs" \
      $((b / (bs > 0 ? bs : 1))) "$p" "$ps" $((p / (ps > 0 ? ps : 1))) \
      "$(echo "$b / $p" | bc -l)" "$added"
  done
done
