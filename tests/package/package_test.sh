#!/usr/bin/env bash
# The Debian package end to end, on this machine (root): scripts/package.sh
# builds it from the existing build directory; its Depends names the package
# of every shared library the binary links; it holds only the binary, its man
# pages and completions; `dpkg -i` installs it; the installed
# /usr/bin/bpfprof prints its version, records 1 s system-wide and reports
# it from another directory; `man` and bash find its page and completion;
# `dpkg -r` removes it and leaves nothing behind.
# Usage: package_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
fail() { echo "package_test: FAILED: $*"; exit 1; }
skip() {
  if [ "${BPFPROF_REQUIRE_KERNEL:-0}" = 1 ]; then fail "would skip on a machine that supports it: $*"; fi
  echo "[  SKIPPED ] package_test: $*"
  exit 77  # ctest's SKIP_RETURN_CODE for kernel tests (CMakeLists.txt)
}
[ "$(id -u)" = 0 ] || skip "dpkg -i needs root"
# One package test at a time on this machine (ctest runs of other trees).
exec 9>/run/lock/bpfprof-package-test.lock
flock 9
if dpkg-query -W -f='${Status}' bpfprof 2>/dev/null | grep -q installed || [ -e /usr/bin/bpfprof ]; then
  fail "bpfprof is installed on this machine already; not replacing it"
fi
work=$(mktemp -d)
installed=0
cleanup() {
  if [ "$installed" = 1 ]; then dpkg -r bpfprof >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

deb=$(BPFPROF_BUILD_DIR=$build "$src/scripts/package.sh" "$work/pkg")
[ -f "$deb" ] || fail "package.sh printed no package: '$deb'"
echo "package_test: $deb"
[ "$(dpkg-deb -f "$deb" Section)" = devel ] || fail "Section is not devel"

# Depends: the package owning each shared library bpfprof links or loads.
depends=$(dpkg-deb -f "$deb" Depends)
echo "package_test: Depends: $depends"
# Those it loads on demand (capstone, for annotate) are named in the binary
# as "lib....so.N" strings.
needed=$(readelf -d "$build/bin/bpfprof" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
on_demand=$(strings -n 8 "$build/bin/bpfprof" | sed -n '/^libcapstone\.so\.[0-9]*$/p' | sort -u)
[ -n "$on_demand" ] || fail "no capstone soname in the binary (annotate loads it on demand)"
for soname in $needed $on_demand; do
  path=$(ldconfig -p | awk -v so="$soname" '$1 == so && !n++ { print $NF }')
  [ -n "$path" ] || fail "no $soname on this machine"
  # (reading whole outputs: an early exit would fail the pipe under pipefail)
  owner=$(dpkg -S "$(realpath "$path")" 2>/dev/null | sed -n '1s/:.*//p') || true
  [ -n "$owner" ] || owner=$(dpkg -S "$path" | sed -n '1s/:.*//p')
  tr ',' '\n' <<<"$depends" | awk '{ print $1 }' | grep -qxF "$owner" || fail "Depends lacks $owner (for $soname)"
done

# Contents: the binary, man pages, completions, the copyright file; nothing else.
dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { print $NF }' | sed 's|^\.||' | sort >"$work/files"
want=$(cat <<'LIST'
/usr/bin/bpfprof
/usr/share/bash-completion/completions/bpfprof
/usr/share/doc/bpfprof/copyright
/usr/share/zsh/vendor-completions/_bpfprof
LIST
)
got=$(grep -v '^/usr/share/man/man1/' "$work/files")
[ "$got" = "$want" ] || fail "unexpected files:"$'\n'"$got"
grep -qx /usr/share/man/man1/bpfprof.1.gz "$work/files" || fail "no bpfprof.1.gz"
grep -qx /usr/share/man/man1/bpfprof-record.1.gz "$work/files" || fail "no bpfprof-record.1.gz"
if grep '^/usr/share/man/' "$work/files" | grep -v '\.1\.gz$'; then fail "a man page not gzipped"; fi

dpkg -i "$deb" >/dev/null
installed=1
cd "$work"  # not the source or build tree
/usr/bin/bpfprof --version | tee "$work/version"
[ "$(head -1 "$work/version")" = "$("$build/bin/bpfprof" --version | head -1)" ] || fail "--version differs from the build's"
rc=0
/usr/bin/bpfprof record -a -d 1 -q -o "$work/r.data" 2>"$work/record.err" || rc=$?
if [ "$rc" = 2 ] && grep -q ermission "$work/record.err"; then skip "recording refused: $(cat "$work/record.err")"; fi
[ "$rc" = 0 ] || fail "record exited $rc: $(cat "$work/record.err")"
/usr/bin/bpfprof report -q -i "$work/r.data" >"$work/report.txt"
mapfile -t v <"$work/version"
line="${v[0]} (${v[1]}; ${v[2]}, ${v[3]}, ${v[4]})"
grep -qxF "# recorded by: $line" "$work/report.txt" || fail "report header lacks '# recorded by: $line'"
samples=$(sed -n 's/^# duration: .* samples: \([0-9]*\) .*/\1/p' "$work/report.txt")
[ "${samples:-0}" -gt 0 ] || fail "no samples in a 1 s system-wide recording"
[ "$(man -w bpfprof-record)" = /usr/share/man/man1/bpfprof-record.1.gz ] || fail "man -w bpfprof-record"
[ "$(bash --norc -c 'source /usr/share/bash-completion/completions/bpfprof; complete -p bpfprof')" = \
  "complete -F _bpfprof bpfprof" ] || fail "bash completion not registered"

dpkg -r bpfprof >/dev/null
installed=0
if dpkg-query -W -f='${Status}' bpfprof 2>/dev/null | grep -q installed; then fail "still installed after dpkg -r"; fi
while read -r f; do
  [ ! -e "$f" ] || fail "$f left after dpkg -r"
done <"$work/files"
for d in /usr/share/doc/bpfprof /usr/share/zsh/vendor-completions/_bpfprof; do
  [ ! -e "$d" ] || fail "$d left after dpkg -r"
done
echo "package_test: installed, ran, removed; $samples samples recorded by the installed binary"
