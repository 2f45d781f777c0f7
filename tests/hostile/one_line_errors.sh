#!/usr/bin/env bash
# The damaged files the fuzzers grew (fuzz/corpus/reader: perf.data files;
# fuzz/corpus/pipe: pipe-mode streams) fed to the commands that read a
# recording: each either succeeds or fails with exactly one stderr line,
# "bpfprof COMMAND: ...", and exit code 1 or 2 — never a crash, a hang, or
# a second line.
# Usage: one_line_errors.sh SOURCE_DIR BIN_DIR [STRIDE [OFFSET]]
# STRIDE N takes every Nth file of each corpus from the OFFSET-th (default 1
# and 0: all). Sanitizer trees pass a larger stride: a sanitized process
# costs ~10x a plain one, and the fuzzers (scripts/fuzz.sh) already run every
# corpus file under ASan+UBSan. ctest runs the corpus as shards at different
# offsets, so both cores work on it.
set -euo pipefail
src=$1 bin=$2/bpfprof stride=${3:-1} offset=${4:-0}
err=$(mktemp)
trap 'rm -f "$err"' EXIT
checked=0 failed=0

check() {  # check COMMAND FILE STDIN ARGS...
  local cmd=$1 file=$2 input=$3
  shift 3
  local rc=0
  # A CPU-time limit of 60 s (then SIGKILL, exit 137: a failure here that
  # names the file) in the process bash forks for the command anyway, not a
  # `timeout` process beside each check (~4 ms each). A process that blocks
  # without spinning is left to ctest's timeout.
  (ulimit -t 60 && exec "$bin" "$cmd" "$@") <"$input" >/dev/null 2>"$err" || rc=$?
  checked=$((checked + 1))
  if [ "$rc" -eq 0 ]; then return; fi
  # Read with builtins: a process per check is most of this test's time.
  local lines=()
  mapfile -t lines <"$err"
  if { [ "$rc" -ne 1 ] && [ "$rc" -ne 2 ]; } || [ "${#lines[@]}" -ne 1 ] ||
     [[ ${lines[0]} != "bpfprof $cmd: "* ]]; then
    echo "FAILED: bpfprof $cmd $* ($file): exit $rc, ${#lines[@]} stderr lines:"
    printf '  %s\n' "${lines[@]:0:5}"
    failed=$((failed + 1))
  fi
}

i=0
for f in "$src"/fuzz/corpus/reader/*; do
  if (( i++ % stride == offset )); then
    check report "$f" /dev/null -q -i "$f"
    check script "$f" /dev/null -i "$f"
  fi
done
i=0
for f in "$src"/fuzz/corpus/pipe/*; do
  if (( i++ % stride == offset )); then
    check report "$f" "$f" -q -i -
  fi
done
echo "one_line_errors: $checked runs (stride ${stride}, offset ${offset}), $failed with more than one line, another prefix or a crash"
(( checked > 0 )) && [ "$failed" -eq 0 ]
