#!/usr/bin/env bash
# Builds the Debian package of bpfprof with CPack from the build directory
# ${BPFPROF_BUILD_DIR:-build} (configured and built first if needed) into
# ${1:-<build dir>/package} and prints the .deb's path.
#   sudo dpkg -i "$(scripts/package.sh)"     # installs /usr/bin/bpfprof, man pages, completions
#   sudo dpkg -r bpfprof                     # removes it
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BPFPROF_BUILD_DIR:-build}
if [ -f "$build/CMakeCache.txt" ]; then
  cmake --build "$build" -j2 --target bpfprof bpfprof_docs >/dev/null
else
  scripts/build.sh bpfprof bpfprof_docs >/dev/null
fi
out=$(realpath -m "${1:-$build/package}")
mkdir -p "$out"
rm -f "$out"/bpfprof_*.deb
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! cpack --config "$build/CPackConfig.cmake" -B "$out" >"$log" 2>&1; then
  cat "$log" >&2
  exit 1
fi
ls "$out"/bpfprof_*.deb
