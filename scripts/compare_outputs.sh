#!/usr/bin/env bash
# Every output of two bpfprof binaries on the same recordings, compared byte
# for byte: report (text, JSON, -g, every sort key), script (text, JSON, -j 1),
# export (every format, --bpf-only, --time, --pid), annotate (the first
# programs, by id and by name, text and JSON), merge, diff and error lines.
# For changes that must not change what bpfprof prints. pprof files are
# compared as one thread writes them (-j 1): with several, the order of their
# samples depends on how the threads split the file, run to run.
#   scripts/compare_outputs.sh OLD_BIN NEW_BIN RECORDING... (two or more for merge/diff)
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: $0 OLD_BIN NEW_BIN RECORDING..." >&2; exit 2; }
old_bin=$1 new_bin=$2; shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# outputs BIN OUTDIR RECORDING...: one file per output (stdout; stderr and exit code beside it).
outputs() {
  local bin=$1 out=$2; shift 2
  mkdir -p "$out"
  run() { local name=$1; shift; "$bin" "$@" >"$out/$name" 2>"$out/$name.err"; echo "rc=$?" >>"$out/$name.err"; }
  i=0
  for data in "$@"; do
    i=$((i+1)); p=f$i
    for fmt in text json; do
      run $p.report.$fmt report -q -i "$data" --format $fmt
      run $p.report.g.$fmt report -q -i "$data" -g --format $fmt
      run $p.report.bpf.$fmt report -q -i "$data" --bpf-only --sort prog,line --format $fmt
      for key in prog sym dso comm pid line owner attach cgroup container prog,line comm,pid,sym; do
        run $p.report.$key.$fmt report -q -i "$data" --sort $key --format $fmt
        run $p.report.g.$key.$fmt report -q -i "$data" -g --sort $key --format $fmt
      done
      run $p.script.$fmt script -q -i "$data" --format $fmt
      run $p.script.j1.$fmt script -q -j 1 -i "$data" --format $fmt
    done
    for fmt in folded svg html json pprof; do
      j=(); [ $fmt = pprof ] && j=(-j 1)
      run $p.export.$fmt export -q "${j[@]}" -i "$data" --format $fmt
      run $p.export.bpf.$fmt export -q "${j[@]}" -i "$data" --format $fmt --bpf-only
    done
    run $p.export.time.folded export -q -i "$data" --time 0.2,1.5
    pid=$("$bin" report -q -i "$data" --sort pid | awk 'NR>1 && $3 ~ /^[0-9]+:/ {split($3,a,":"); print a[1]; exit}')
    [ -n "$pid" ] && run $p.export.pid.folded export -q -i "$data" --pid "$pid"
    # annotate: the first few BPF programs of the report, by name and by id.
    "$bin" report -q -i "$data" --format json > "$out/$p.progs.json" 2>/dev/null
    python3 - "$out/$p.progs.json" > "$out/$p.annotate.list" <<'PY'
import json,sys
try: d=json.load(open(sys.argv[1]))
except Exception: sys.exit(0)
seen=set()
for p in d.get("programs",[])[:6]:
    for q in (str(p.get("id")), p.get("name")):
        if q and q not in seen: seen.add(q); print(q)
PY
    n=0
    while read -r q; do n=$((n+1))
      run $p.annotate.$n.text annotate -q -i "$data" "$q"
      run $p.annotate.$n.json annotate -q -i "$data" "$q" --format json
    done < "$out/$p.annotate.list"
    run $p.annotate.missing annotate -q -i "$data" no_such_program_xyz
  done
  if [ $# -ge 2 ]; then
    for fmt in pprof folded; do
      run merge.$fmt merge -q -j 1 --format $fmt "$@"
      run merge.bpf.$fmt merge -q -j 1 --bpf-only --format $fmt "$@"
    done
    for fmt in text json; do
      run diff.$fmt diff -q "$1" "$2" --format $fmt
      run diff.rev.$fmt diff -q "$2" "$1" --format $fmt
    done
  fi
  run bad.sort report -i "$1" --sort nope
  run bad.file report -i /nonexistent.data
  run usage --help
}

outputs "$old_bin" "$work/old" "$@"
outputs "$new_bin" "$work/new" "$@"
if diff -r "$work/old" "$work/new"; then
  echo "compare_outputs: $(ls "$work/new" | wc -l) outputs identical"
else
  echo "compare_outputs: outputs differ" >&2
  exit 1
fi
