#!/usr/bin/env bash
# The readers as a user meets them (run by hand, as root; not a test): records
# a long-running BPF program system-wide with both recorders — 30 s at
# -g -F 20000 and a tiny 1 s at 99 Hz — then times each bpfprof reading mode
# against perf's fastest equivalent on each file, paired and alternating
# (perf, bpfprof, bpfprof, perf, ...), medians of the runs, peak RSS from
# /usr/bin/time. Output to /dev/null; page cache warm (each file is read once
# before timing). Prints a markdown section; with --write it also replaces the
# section between the user-bench markers in bench/RESULTS.md. --rows REGEX
# times only the rows whose mode matches (e.g. --rows script), and --write
# then replaces the section between the markers named after it
# (user-bench-script).
#
#   bench/user_bench.sh [--write] [--rows REGEX] [runs] [seconds]     (defaults: 5 runs, 30 s)
#
# BPFPROF_BUILD_DIR (default build) picks the binaries; BPFPROF_BENCH_DIR keeps
# the recordings there (default: a temporary directory, removed at exit).
set -euo pipefail
cd "$(dirname "$0")/.."
write=0
only=""
while [[ ${1:-} == --* ]]; do
  case $1 in
    --write) write=1 ;;
    --rows) only=$2; shift ;;
    *) echo "user_bench: unknown flag $1" >&2; exit 2 ;;
  esac
  shift
done
runs=${1:-5}
secs=${2:-30}
build=${BPFPROF_BUILD_DIR:-build}
bin="$build/bin"
bpfprof=$(realpath "$bin/bpfprof")
if [[ -n ${BPFPROF_BENCH_DIR:-} ]]; then
  work=$BPFPROF_BENCH_DIR
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)

# The workload: one long-running BPF program burning CPU (BPF_PROG_TEST_RUN
# in a loop) until stopped. Records `secs` seconds of the whole system.
record() {  # recorder seconds freq output
  local recorder=$1 s=$2 freq=$3 out=$4
  "$bin/bpfprof-workload" --hold --quiet >"$work/ready" &
  local wl=$!
  for _ in $(seq 100); do grep -q ready "$work/ready" && break; sleep 0.1; done
  if [[ $recorder == bpfprof ]]; then
    "$bpfprof" record -a -g -F "$freq" -e cpu-clock -q -o "$out" -- sleep "$s"
  else
    perf record -a -g -F "$freq" -e cpu-clock -q -o "$out" -- sleep "$s" 2>/dev/null
  fi
  kill -TERM "$wl"
  wait "$wl" || true
}

big_b="$work/big-bpfprof.data" big_p="$work/big-perf.data"
tiny_b="$work/tiny-bpfprof.data" tiny_p="$work/tiny-perf.data"
[[ -s $big_b ]] || record bpfprof "$secs" 20000 "$big_b"
[[ -s $big_p ]] || record perf "$secs" 20000 "$big_p"
[[ -s $tiny_b ]] || record bpfprof 1 99 "$tiny_b"
[[ -s $tiny_p ]] || record perf 1 99 "$tiny_p"

samples() { perf report -i "$1" --stats 2>/dev/null | awk '/SAMPLE events:/ { print $3; exit }'; }

# One timed run: "seconds maxrss_kb output_bytes". Wall time from bash's
# microsecond clock around the whole pipeline (/usr/bin/time counts in 10 ms
# steps), which includes starting /usr/bin/time and wc (see `harness` below);
# peak RSS from /usr/bin/time.
timed() {
  local t0 t1
  t0=$EPOCHREALTIME
  /usr/bin/time -f '%M' -o "$work/t" "$@" 2>"$work/err" | wc -c >"$work/bytes" || {
    cat "$work/err" >&2
    exit 1
  }
  t1=$EPOCHREALTIME
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }') $(cat "$work/t") $(cat "$work/bytes")"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

# Wall seconds of a command (output to /dev/null), median of runs.
wall() {
  local ts=() t0 t1
  for ((i = 0; i < runs; i++)); do
    t0=$EPOCHREALTIME
    "$@" >/dev/null
    t1=$EPOCHREALTIME
    ts+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')")
  done
  printf '%s\n' "${ts[@]}" | median
}
# The floors of reading each big file: the page-cache read (cat), and the
# least a reader does (bench/read_floor.cc: map, walk every record, sum the
# leaf ips; process start included) on one core and with both halves read at
# once. What timed() adds to every row: the same pipeline around `true`.
harness=$(for ((i = 0; i < runs; i++)); do timed true | cut -d' ' -f1; done | median)
floor_b_cat=$(wall cat "$big_b") floor_p_cat=$(wall cat "$big_p")
floor_b1=$(wall "$bin/bpfprof-read-floor" "$big_b") floor_p1=$(wall "$bin/bpfprof-read-floor" "$big_p")
floor_b2=$(wall "$bin/bpfprof-read-floor" -j 2 "$big_b") floor_p2=$(wall "$bin/bpfprof-read-floor" -j 2 "$big_p")
floor_tb1=$(wall "$bin/bpfprof-read-floor" "$tiny_b") floor_tp1=$(wall "$bin/bpfprof-read-floor" "$tiny_p")
# script's output alone: its bytes from the page cache through a pipe to wc.
"$bpfprof" script -q -i "$big_b" >"$work/script.out"
floor_out=$(wall bash -c "cat '$work/script.out' | wc -c")
out_mb=$(($(stat -c %s "$work/script.out") / 1000000))
rm -f "$work/script.out"

# row label file "perf command" "bpfprof command" floor: paired, alternating order.
rows=()
row() {
  local label=$1 file=$2 pcmd=$3 bcmd=$4 floor=$5
  [[ -z $only || $label =~ $only ]] || return 0
  local pt=() pm=() bt=() bm=() pb=0 bb=0
  cat "$file" >/dev/null
  for ((i = 0; i < runs; i++)); do
    local order=(p b)
    ((i % 2)) && order=(b p)
    for who in "${order[@]}"; do
      if [[ $who == p ]]; then
        read -r t m pb < <(timed ${pcmd//FILE/$file})
        pt+=("$t") pm+=("$m")
      else
        read -r t m bb < <(timed ${bcmd//FILE/$file})
        bt+=("$t") bm+=("$m")
      fi
    done
  done
  local ptm btm pmm bmm
  ptm=$(printf '%s\n' "${pt[@]}" | median)
  btm=$(printf '%s\n' "${bt[@]}" | median)
  pmm=$(printf '%s\n' "${pm[@]}" | median)
  bmm=$(printf '%s\n' "${bm[@]}" | median)
  local shown=${bcmd//FILE/f}
  shown=${shown//$bpfprof/bpfprof}
  shown=${shown% }
  rows+=("$(awk -v l="$label" -v pc="${pcmd//FILE/f}" -v bc="$shown" -v pt="$ptm" -v bt="$btm" \
    -v pm="$pmm" -v bm="$bmm" -v pb="$pb" -v bb="$bb" -v pr="${pt[*]}" -v br="${bt[*]}" -v fl="$floor" 'BEGIN {
      printf "| %s | `%s` | %.3f s, %.0f MiB | `%s` | %.3f s, %.0f MiB | **%.1fx** | %.1f | %.2f | %.1f / %.1f MB | %s / %s |",
        l, pc, pt, pm / 1024, bc, bt, bm / 1024, (bt > 0 ? pt / bt : 0), (fl > 0 ? bt / fl : 0),
        (pm > 0 ? bm / pm : 0), pb / 1e6, bb / 1e6, pr, br }')")
  echo "${rows[-1]}" >&2
}

B="$bpfprof"
# bpfprof reads the host's kallsyms only when asked: perf's files have no
# snapshot, so their kernel frames stay [unknown] (less work than perf, which
# reads the host's). BPFPROF_BENCH_KALLSYMS="--kallsyms /proc/kallsyms" gives
# bpfprof the same symbols, once that flag exists.
K=${BPFPROF_BENCH_KALLSYMS-}
for kind in bpfprof perf; do
  if [[ $kind == bpfprof ]]; then
    big=$big_b tiny=$tiny_b k="" fb=$floor_b1 ft=$floor_tb1
  else
    big=$big_p tiny=$tiny_p k=$K fb=$floor_p1 ft=$floor_tp1
  fi
  row "callers tree ($kind file)" "$big" "perf report -i FILE --stdio" "$B report -i FILE -g $k" "$fb"
  row "flat ($kind file)" "$big" "perf report -i FILE --stdio --no-children --sort sym -g none" "$B report -i FILE $k" "$fb"
  row "script with callchains ($kind file)" "$big" "perf script -i FILE" "$B script -i FILE $k" "$fb"
  row "script, one line ($kind file)" "$big" "perf script -i FILE -G" "$B script -i FILE -G $k" "$fb"
  row "1 s at 99 Hz ($kind file)" "$tiny" "perf report -i FILE --stdio" "$B report -i FILE $k" "$ft"
done

section=$(
  echo "### User benchmark: \`bench/user_bench.sh${only:+ --rows $only} $runs $secs\` at $commit ($(date -u +%Y-%m-%d), load $(cut -d' ' -f1-3 /proc/loadavg))"
  echo
  echo "Recordings (the workload's long-running BPF program, \`bpfprof-workload --hold\`, recorded"
  echo "system-wide with \`-a -g -e cpu-clock\`): bpfprof's $secs s at 20 kHz $(samples "$big_b") samples,"
  echo "$(($(stat -c %s "$big_b") / 1000000)) MB; perf's $(samples "$big_p") samples, $(($(stat -c %s "$big_p") / 1000000)) MB;"
  echo "1 s at 99 Hz: bpfprof's $(samples "$tiny_b") samples, $(($(stat -c %s "$tiny_b") / 1000)) kB;"
  echo "perf's $(samples "$tiny_p") samples, $(($(stat -c %s "$tiny_p") / 1000)) kB. $runs paired runs per row,"
  echo "alternating which tool goes first; wall time and peak RSS are medians; output to a pipe"
  echo "counted by \`wc -c\`; wall time from bash's \`\$EPOCHREALTIME\` around the pipeline, which adds"
  echo "$harness s (the same pipeline around \`true\`, not subtracted). \`f\` is the file. Floors of the"
  echo "big files (wall, medians, output to /dev/null): page-cache read \`cat f\` bpfprof's $floor_b_cat s,"
  echo "perf's $floor_p_cat s; \`bpfprof-read-floor f\` (bench/read_floor.cc: map, walk every record, sum"
  echo "the leaf ips, one core) $floor_b1 s and $floor_p1 s; its \`-j 2\` (both halves touched at once)"
  echo "$floor_b2 s and $floor_p2 s; on the tiny files $floor_tb1 s and $floor_tp1 s. **x floor** is"
  echo "bpfprof's time over the one-core read floor of the same file. Script's output alone (with callchains, its"
  echo "$out_mb MB on bpfprof's file, from the page cache through a pipe to \`wc -c\`): $floor_out s."
  echo
  echo "| mode | perf command | perf | bpfprof command | bpfprof | speed | x floor | memory (bpfprof / perf) | output perf / bpfprof | runs, s (perf / bpfprof) |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
)
echo "$section"
if ((write)); then
  python3 - "$section" "user-bench${only:+-$only}" <<'EOF'
import sys
path = "bench/RESULTS.md"
begin, end = "<!-- %s begin -->" % sys.argv[2], "<!-- %s end -->" % sys.argv[2]
text = open(path).read()
block = begin + "\n" + sys.argv[1] + "\n" + end
if begin in text:
    text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
else:
    text = text.replace("## bpfprof report / script vs perf report / perf script\n",
                        "## bpfprof report / script vs perf report / perf script\n\n" + block + "\n", 1)
open(path, "w").write(text)
EOF
fi
