#!/usr/bin/env bash
# The damaged files the fuzzers grew (fuzz/corpus/reader: perf.data files;
# fuzz/corpus/pipe: pipe-mode streams) fed to the commands that read a
# recording: each either succeeds or fails with exactly one stderr line,
# "bpfprof COMMAND: ...", and exit code 1 or 2 — never a crash, a hang, or
# a second line.
# Usage: one_line_errors.sh SOURCE_DIR BIN_DIR
set -euo pipefail
src=$1 bin=$2/bpfprof
err=$(mktemp)
trap 'rm -f "$err"' EXIT
checked=0 failed=0

check() {  # check COMMAND FILE STDIN ARGS...
  local cmd=$1 file=$2 input=$3
  shift 3
  local rc=0
  timeout 60 "$bin" "$cmd" "$@" <"$input" >/dev/null 2>"$err" || rc=$?
  checked=$((checked + 1))
  if [ "$rc" -eq 0 ]; then return; fi
  local lines first
  lines=$(wc -l <"$err")
  first=$(head -n 1 "$err")
  if { [ "$rc" -ne 1 ] && [ "$rc" -ne 2 ]; } || [ "$lines" -ne 1 ] || [[ $first != "bpfprof $cmd: "* ]]; then
    echo "FAILED: bpfprof $cmd $* ($file): exit $rc, $lines stderr lines:"
    sed 's/^/  /' "$err" | head -n 5
    failed=$((failed + 1))
  fi
}

for f in "$src"/fuzz/corpus/reader/*; do
  check report "$f" /dev/null -q -i "$f"
  check script "$f" /dev/null -i "$f"
done
for f in "$src"/fuzz/corpus/pipe/*; do
  check report "$f" "$f" -q -i -
done
echo "one_line_errors: $checked runs, $failed with more than one line, another prefix or a crash"
[ "$failed" -eq 0 ]
