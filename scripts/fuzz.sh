#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang, ASan and UBSan in their own
# build directory and runs each for N seconds (default 20), two at a time,
# over a copy of its seed corpus (fuzz/corpus/<target>). Fails on any crash, leak, timeout or
# sanitizer report; the reproducer is kept under <build>/fuzz-artifacts.
# Long runs by hand: scripts/fuzz.sh 3600
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
build=${BPFPROF_FUZZ_BUILD_DIR:-build-fuzz}
targets=(records reader features pipe capture)

# libFuzzer's runtime (libclang-rt-14-dev) is in install-deps.sh.
runtime="$(clang -print-resource-dir)/lib/linux/libclang_rt.fuzzer-$(uname -m).a"
if [ ! -e "$runtime" ]; then
  echo "fuzz: no libFuzzer runtime at $runtime: run scripts/install-deps.sh"
  exit 1
fi

source scripts/ccache-env.sh
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DBPFPROF_FUZZ=ON -DBPFPROF_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# Only the fuzz targets and the libraries they link, not the whole project.
cmake --build "$build" -j2 --target "${targets[@]/#/bpfprof_fuzz_}"

artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Two targets at a time, one per core; each one's lines printed when it ends.
run_one() {
  local t=$1
  mkdir -p "$work/$t"
  cp fuzz/corpus/"$t"/* "$work/$t"/
  if ! "$build/fuzz/bpfprof_fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix="$artifacts/$t-" "$work/$t" >"$work/$t.log" 2>&1; then
    echo "fuzz: $t FAILED; last lines of its log (reproducer in $artifacts):"
    tail -n 40 "$work/$t.log"
    return 1
  fi
  grep -E '^stat::number_of_executed_units|^Done' "$work/$t.log" | sed "s/^/fuzz: $t: /"
}
status=0
pids=()
for t in "${targets[@]}"; do
  echo "fuzz: $t for ${seconds}s"
  run_one "$t" >"$work/$t.out" 2>&1 &
  pids+=("$!:$t")
  if [ "${#pids[@]}" -eq 2 ] || [ "$t" = "${targets[-1]}" ]; then
    for p in "${pids[@]}"; do
      wait "${p%%:*}" || status=1
      cat "$work/${p#*:}.out"
    done
    pids=()
  fi
done
exit "$status"
