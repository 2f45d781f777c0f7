#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: unit, kernel (real BPF
# programs recorded on this machine) and peer (Linux perf reads our files).
# Kernel tests skip only with a printed reason; where this machine supports
# them (system-wide perf_event_open and CAP_BPF/CAP_PERFMON), a skip fails.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then exec sudo --preserve-env=CI,BPFPROF_BUILD_DIR,BPFPROF_ASAN_BUILD_DIR,BPFPROF_TSAN_BUILD_DIR "$0" "$@"; fi

# Each phase's wall time goes into the summary (bench/RESULTS.md keeps the
# cold and warm figures); the first phase starts with the script.
summary=()
phase_start=0
phase() { summary+=("$1 ($((SECONDS - phase_start)) s)"); phase_start=$SECONDS; }

scripts/install-deps.sh
# The plain tree is what ships: the binary, the workload, the man pages and
# the benchmark helpers, not the test binaries. Every test runs once, under
# ASan+UBSan below; here only what needs the shipped binary (below).
scripts/build.sh bpfprof bpfprof-workload bpfprof_docs bpfprof-stored-info bpfprof-read-floor \
  bpfprof-bpf-call-cost
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

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
status=0
# A skip where kernel tests are required fails the run (ctest says
# "(Skipped)", a test binary run directly "[  SKIPPED ]").
check_skips() {
  if [ "$BPFPROF_REQUIRE_KERNEL" = 1 ] && grep -qE '\(Skipped\)|\[  SKIPPED \]' "$1"; then
    echo "test: FAILED: tests skipped on a machine that supports them ($2)"
    status=1
  fi
}
ctest_counts() {
  awk '/Test +#[0-9]+: / { if (/ Passed/) p++; else if (/Skipped/) s++; else f++ }
       END { printf "%d passed, %d failed, %d skipped", p, f, s }' "$1"
}

# With the shipped binary: the Debian package (built, installed, run,
# removed) and every damaged file of the fuzzers' corpora (under sanitizers
# only every 32nd: a sanitized process costs ~15x). The other tests would
# repeat here what the ASan+UBSan tree runs.
phase "install and build"
plain_tests='^(bpfprof_package_test|bpfprof_one_line_errors_test_[0-9]+)$'
ctest --test-dir "$build" -j2 -R "$plain_tests" --output-on-failure --timeout 600 2>&1 |
  tee "$logs/plain" || status=$?
check_skips "$logs/plain" "plain build"
phase "tests with the shipped binary: $(ctest_counts "$logs/plain")"
# libFuzzer targets, short run; a failed build or finding says so in the summary.
if scripts/fuzz.sh "${BPFPROF_FUZZ_SECONDS:-20}"; then
  phase "fuzz build and run"
else
  status=1
  phase "fuzz build and run: FAILED"
fi

# The same tests under sanitizers, each tree in its own directory, built at
# -Og -g1 without the benchmark helpers (CMakeLists.txt) and run with -j2.
# Every finding halts the process that made it, so the test fails: ASan and
# LeakSanitizer by halt_on_error, UBSan by -fno-sanitize-recover=all.
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

# ASan+UBSan: every unit, golden and kernel test, the only time they run.
# Kernel tests run one at a time beside the unit tests whatever -j says (the
# resource lock bpfprof_kernel, docs/design.md). Left out, each for a reason
# that is not a finding:
#   bpfprof_package_test: packages and dpkg-installs the build tree's binary;
#     an ASan binary is not what ships, and the plain run tests the package.
asan_exclude='^bpfprof_package_test$'
asan=${BPFPROF_ASAN_BUILD_DIR:-build-asan}
BPFPROF_BUILD_DIR=$asan BPFPROF_CMAKE_ARGS=-DBPFPROF_SANITIZE=ON scripts/build.sh
phase "ASan+UBSan build"
# TSan: the tests whose code runs threads, and only their binaries (a TSan
# tree costs a build of its own): the recorder with its enricher, capture and
# tracefs thread (record module and kernel record tests), report's parallel
# passes (pipeline tests; golden tests, which run report and script with -j
# and the symbolizer's threads), the kallsyms snapshot's names decompressed
# on first use from any thread (perfdata tests), top. Each binary runs directly, serially
# (kernel tests among them). Two lanes, as ctest runs the other trees: the
# kernel tests' binaries one after another, and beside them the others'.
tsan=${BPFPROF_TSAN_BUILD_DIR:-build-tsan}
tsan_kernel=(src/record/bpfprof_record_kernel_test tests/bpfprof_kernel_record_test
             src/top/bpfprof_top_kernel_test)
tsan_unit=(src/record/bpfprof_record_test tests/bpfprof_pipeline_test
           tests/golden/bpfprof_golden_test src/top/bpfprof_top_test
           src/perfdata/bpfprof_perfdata_test)
tsan_tests=("${tsan_kernel[@]}" "${tsan_unit[@]}")
# Its tree builds while the ASan+UBSan tests run, at low priority: on the CPU
# they leave idle (a kernel test waits on the kernel and its recordings much
# of its time, one at a time), not on theirs.
BPFPROF_BUILD_DIR=$tsan BPFPROF_CMAKE_ARGS=-DBPFPROF_TSAN=ON nice -n 10 scripts/build.sh \
  bpfprof bpfprof-workload "${tsan_tests[@]##*/}" >"$logs/tsan.build" 2>&1 &
tsan_build=$!
tsan_build_start=$SECONDS
ctest --test-dir "$asan" -j2 -E "$asan_exclude" --output-on-failure --timeout 900 2>&1 |
  tee "$logs/asan" || status=$?
check_skips "$logs/asan" "ASan+UBSan"
phase "tests under ASan+UBSan: $(ctest_counts "$logs/asan")"
if ! wait "$tsan_build"; then
  cat "$logs/tsan.build"
  echo "test: FAILED: the TSan build"
  printf '%s\n' "${summary[@]}" "total: $SECONDS s"
  exit 1
fi
phase "TSan build, the part after the tests above (it began with them: $((SECONDS - tsan_build_start)) s)"

# tsan_lane NAME BINARY...: runs each in turn from its directory (as ctest
# does); the lane's report goes to $logs/tsan.NAME, one line per failure to
# $logs/tsan.NAME.failed.
tsan_lane() {
  local lane=$1 t
  shift
  : >"$logs/tsan.$lane.failed"
  for t in "$@"; do
    echo "test: under TSan: $t"
    # 77: tests skipped, none failed (testing/kernel_test_main.cc); a skip
    # where kernel tests are required fails below (check_skips).
    local rc=0
    (cd "$tsan/$(dirname "$t")" && timeout 1200 "./$(basename "$t")") >"$logs/tsan.$lane.one" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
      cat "$logs/tsan.$lane.one"
      echo "test: FAILED under TSan: $t"
      echo "$t" >>"$logs/tsan.$lane.failed"
    fi
    sed -n -E 's/^(\[  (PASSED|FAILED|SKIPPED) *\].*)/  \1/p' "$logs/tsan.$lane.one"
    cat "$logs/tsan.$lane.one" >>"$logs/tsan.$lane.all"
  done >"$logs/tsan.$lane" 2>&1
}
tsan_lane kernel "${tsan_kernel[@]}" &
kernel_lane=$!
tsan_lane unit "${tsan_unit[@]}"
wait "$kernel_lane" || status=1
cat "$logs/tsan.kernel" "$logs/tsan.unit"
cat "$logs/tsan.kernel.all" "$logs/tsan.unit.all" >"$logs/tsan"
tsan_failed=$(cat "$logs/tsan.kernel.failed" "$logs/tsan.unit.failed" | wc -l)
if [ "$tsan_failed" -ne 0 ]; then status=1; fi
check_skips "$logs/tsan" "TSan"
phase "test binaries under TSan: $((${#tsan_tests[@]} - tsan_failed)) passed, $tsan_failed failed"

printf '%s\n' "${summary[@]}" "total: $SECONDS s"
exit "$status"
