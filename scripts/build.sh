#!/usr/bin/env bash
# Configures and builds bpfprof into ${BPFPROF_BUILD_DIR:-build} (two jobs: the
# machines this project runs on have two cores). Arguments name targets to
# build (default: everything, tests included). BPFPROF_CMAKE_ARGS adds
# configure options (the sanitizer builds: -DBPFPROF_SANITIZE=ON, -DBPFPROF_TSAN=ON).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BPFPROF_BUILD_DIR:-build}
source scripts/ccache-env.sh
read -r -a extra <<<"${BPFPROF_CMAKE_ARGS:-}"
cmake -S . -B "$build" -G Ninja -DBPFPROF_WERROR=ON -DBPFPROF_TESTS=ON "${extra[@]}" >/dev/null
if [ $# -gt 0 ]; then
  cmake --build "$build" -j2 --target "$@"
else
  cmake --build "$build" -j2
fi
