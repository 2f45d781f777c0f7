#!/usr/bin/env bash
# Installs every Debian 12 package bpfprof needs to build, test and benchmark,
# and the npm packages of the speedscope peer test.
# Safe to run again: apt-get skips what is already installed.
set -euo pipefail

packages=(
  # build
  build-essential cmake ninja-build pkg-config clang llvm
  # a compiler cache: CI's machine keeps it between runs (scripts/build.sh),
  # and a faster linker (CMakeLists.txt)
  ccache lld
  # the Debian package (scripts/package.sh): dpkg-shlibdeps derives its Depends
  dpkg-dev
  # libraries
  libbpf-dev libelf-dev libdw-dev zlib1g-dev libzstd-dev libcapstone-dev
  libcli11-dev libfmt-dev nlohmann-json3-dev libprotobuf-dev protobuf-compiler
  libncurses-dev
  # the bpfprof binary's allocator: its heap in huge pages (src/cli/malloc_conf.cc)
  libjemalloc-dev
  # tests and benchmarks
  googletest libgtest-dev libgmock-dev libbenchmark-dev libclang-rt-14-dev
  # peers
  linux-perf bpftool time
  # a real tracing tool that attaches the classic way (PERF_EVENT_IOC_SET_BPF)
  bpftrace
  # go tool pprof reads our pprof files (peer test)
  golang-go
  # the flame graph page rendered headless; well-formedness of the SVG
  chromium libxml2-utils
  # a real terminal for `bpfprof top`'s screen tests
  tmux
  # the man page and completion tests: groff renders the pages, zsh checks its completion
  groff-base zsh
)

# speedscope, the peer that imports `bpfprof script` text, and the driver that
# runs it in headless Chromium (testing/speedscope/, versions pinned in its
# package-lock.json): from the npm registry with the machine's Node.js and
# npm, again only when the lock file changed since the last install.
install_speedscope() {
  local dir
  dir="$(dirname "$0")/../testing/speedscope"
  if ! command -v npm >/dev/null; then
    echo "install-deps: npm is missing: speedscope not installed (its peer test will say so)"
    return 0
  fi
  if cmp -s "$dir/package-lock.json" "$dir/node_modules/.bpfprof-installed-lock.json"; then
    echo "install-deps: speedscope present"
    return 0
  fi
  echo "install-deps: installing speedscope and playwright-core into $dir/node_modules"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$dir/package-lock.json" "$dir/node_modules/.bpfprof-installed-lock.json"
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
install_speedscope
