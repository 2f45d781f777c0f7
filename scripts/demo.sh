#!/usr/bin/env bash
# The main job: builds bpfprof, records its built-in BPF workload system-wide
# (short-lived programs, bpf2bpf programs, one long-lived program) and prints
# the report of which BPF programs burned the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then exec sudo --preserve-env=BPFPROF_BUILD_DIR "$0" "$@"; fi

scripts/install-deps.sh >/dev/null
scripts/build.sh bpfprof bpfprof-workload >/dev/null
build=${BPFPROF_BUILD_DIR:-build}
out=${1:-demo.data}

"$build/bin/bpfprof" record -a -g -F 999 -o "$out" -- \
  "$build/bin/bpfprof-workload" --programs 30 --lifetime 50ms,200ms --subprog-programs 4 \
  --long-lived 1s --truth "$out.truth.json" --quiet
echo
# The first 60 lines, without a pipe: `head` closing one early would kill the
# report with SIGPIPE mid-write, and pipefail would fail the demo with it.
report=$("$build/bin/bpfprof" report -i "$out" --sort sym)
sed -n 1,60p <<<"$report"
echo
echo "Also: $build/bin/bpfprof report -i $out --bpf-only --sort prog,line   (cost per BPF source line)"
echo "      perf report -i $out                                        (Linux perf reads the same file)"
