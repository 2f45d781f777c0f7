#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: unit, kernel (real BPF
# programs recorded on this machine) and peer (Linux perf reads our files).
# Kernel tests skip only with a printed reason; where this machine supports
# them (system-wide perf_event_open and CAP_BPF/CAP_PERFMON), a skip fails.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then exec sudo --preserve-env=CI,BPFPROF_BUILD_DIR "$0" "$@"; fi

scripts/install-deps.sh
scripts/build.sh
build=${BPFPROF_BUILD_DIR:-build}

# Does this machine support kernel tests? Asked of the kernel directly, not of
# our own code, so a bug in bpfprof cannot turn them into skips.
cap_eff=$(awk '/^CapEff:/ {print $2}' /proc/self/status)
has_cap() { (( (16#$cap_eff >> $1) & 1 )); }
if has_cap 38 && has_cap 39 && perf stat -a -e cpu-clock -x, -o /dev/null -- true 2>/dev/null; then
  export BPFPROF_REQUIRE_KERNEL=1
  echo "test: this machine supports kernel tests (CAP_PERFMON, CAP_BPF, system-wide perf_event_open): they must not skip"
else
  export BPFPROF_REQUIRE_KERNEL=0
  echo "test: kernel tests may skip here (no CAP_PERFMON/CAP_BPF or system-wide perf_event_open refused)"
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
ctest --test-dir "$build" --output-on-failure --timeout 600 2>&1 | tee "$log" || status=$?
scripts/fuzz.sh "${BPFPROF_FUZZ_SECONDS:-20}" || status=1  # libFuzzer targets, short run
if [ "$BPFPROF_REQUIRE_KERNEL" = 1 ] && grep -q '(Skipped)' "$log"; then
  echo "test: FAILED: tests skipped on a machine that supports them"
  status=1
fi
counts=$(awk '/Test +#[0-9]+: / { if (/ Passed/) p++; else if (/Skipped/) s++; else f++ }
              END { printf "%d %d %d", p, f, s }' "$log")
read -r passed failed skipped <<<"$counts"
echo "tests: $passed passed, $failed failed, $skipped skipped"
exit "$status"
