#!/usr/bin/env bash
# A program's Total against the truth (run by hand, as root; not a test).
# `bpfprof-workload --price` runs getppid() in a loop with a map-heavy program
# (16 hash-map updates per call, for that process only) attached at
# raw_syscalls:sys_enter, (a) through a perf event (the perf-event
# tracepoint path) and (b) as a raw tracepoint. The truth: the loop's CPU
# per call attached minus detached (alternating rounds, medians), as a share
# of its CPU attached. bpfprof's figure: the program's Total over the
# process's samples, from `bpfprof record -a` of an attached run reported
# with `--pid`. Self alone is printed beside it.
#
#   bench/price.sh [rounds] [ops per round] [ops recorded]
# Runs itself in a private mount namespace with tracefs mounted there.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${BPFPROF_PRICE_NS:-}" != 1 ]; then
  exec env BPFPROF_PRICE_NS=1 unshare -m --propagation private "$0" "$@"
fi
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
rounds=${1:-5}
ops=${2:-2000000}
recorded=${3:-4000000}
build=${BPFPROF_BUILD_DIR:-build}
bin="$build/bin"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

for hook in tracepoint raw_tp; do
  "$bin/bpfprof-workload" --price "$hook" --price-ops "$ops" --price-rounds "$rounds" \
    >"$work/$hook.ab"
  detached=$(awk '/^detached_ns/ {print $2}' "$work/$hook.ab" | median)
  attached=$(awk '/^attached_ns/ {print $2}' "$work/$hook.ab" | median)
  "$bin/bpfprof" record -q -a -F 999 -o "$work/$hook.data" -- \
    "$bin/bpfprof-workload" --price "$hook" --price-ops "$recorded" \
    --truth "$work/$hook.truth" >"$work/$hook.hold"
  pid=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["pid"])' "$work/$hook.truth")
  "$bin/bpfprof" report -q -i "$work/$hook.data" --pid "$pid" --format json >"$work/$hook.json"
  python3 - "$work/$hook.json" "$detached" "$attached" "$hook" "$(awk '{print $2}' "$work/$hook.hold")" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
detached, attached, hook, held = float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
samples = report["samples"]
rows = [p for p in report["programs"] if p["name"] == "price_map"]
total = sum(p["total_samples"] for p in rows)
self_ = sum(p["self_samples"] for p in rows)
callees = sum(p["callee_samples"] for p in rows)
dispatch = sum(p["dispatch_samples"] for p in rows)
truth = (attached - detached) / attached
share = total / samples if samples else 0
print(f"{hook}: detached {detached:.0f} ns/op, attached {attached:.0f} ns/op (recorded run {held} ns/op)")
print(f"  truth (A-B)/A {100 * truth:.1f}%  bpfprof Total {100 * share:.1f}% "
      f"(self {100 * self_ / samples:.1f}%, callees {100 * callees / samples:.1f}%, "
      f"dispatch {100 * dispatch / samples:.1f}%{' estimated' if any(p['dispatch_estimated'] for p in rows) else ''}) "
      f"of {samples} samples; Total/truth {share / truth:.2f}")
EOF
done
