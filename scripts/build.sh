#!/usr/bin/env bash
# Configures and builds bpfprof into ${BPFPROF_BUILD_DIR:-build} (two jobs: the
# machines this project runs on have two cores). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BPFPROF_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DBPFPROF_WERROR=ON "$@" >/dev/null
cmake --build "$build" -j2
