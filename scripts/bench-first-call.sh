#!/usr/bin/env bash
# The process's very first SpGEMM, through the runtime and as the bare kernel, each in fresh
# processes (alternating, 5 of each), against the steady state of the same process: prints the
# medians. The bare kernel's ratio is what any first call in a new process pays (memory faulted
# in on first touch); the runtime's first call adds inspection and planning to it.
#
#   scripts/bench-first-call.sh [matrix.mtx ...]      (A*A, A*A^T if rectangular; default: a few > 1 ms)
#   BUILD=build   build folder with bench/bench_call_overhead
#   SPARSEJIT_BENCH_CLOCK=wall   wall time instead of thread CPU time (a quiet machine only)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD:-$here/build}"
bin="$build/bench/bench_call_overhead"
[[ -x "$bin" ]] || cmake --build "$build" -j2 --target bench_call_overhead >/dev/null
files=("$@")
if [[ ${#files[@]} -eq 0 ]]; then
  d="${SPARSEJIT_DATA_DIR:-$here/../shared/data}/matrices"
  for m in bcsstk13 bcsstk16 mbeacxc dwt_992 tomography; do
    [[ -f "$d/$m.mtx" ]] && files+=("$d/$m.mtx")
  done
fi
[[ ${#files[@]} -gt 0 ]] || { echo "bench-first-call: no matrices (../shared/data absent?)"; exit 0; }
raw="$(mktemp /tmp/bench-first-call.XXXXXX.tsv)"
for f in "${files[@]}"; do
  for r in 1 2 3 4 5; do
    for kind in ours bare; do "$bin" --process-first "$kind" "$f" >>"$raw" || true; done
  done
done
python3 - "$raw" <<'PY'
import sys, statistics as st
rows = [l.split("\t") for l in open(sys.argv[1]) if l.strip()]
by = {}
for m, kind, first, steady, ratio, faults in rows:
    by.setdefault(m, {}).setdefault(kind, []).append((float(first), float(steady), float(ratio), int(faults)))
print(f"{'matrix':14} {'ours 1st':>9} {'steady':>8} {'ratio':>6} {'faults':>7} | {'bare 1st':>9} {'steady':>8} {'ratio':>6} {'faults':>7} | added by the runtime")
for m, k in by.items():
    if "ours" not in k or "bare" not in k: continue
    med = lambda kind, i: st.median(r[i] for r in k[kind])
    o = [med("ours", i) for i in range(4)]; b = [med("bare", i) for i in range(4)]
    print(f"{m:14} {o[0]:9.3f} {o[1]:8.3f} {o[2]:6.2f} {o[3]:7.0f} | {b[0]:9.3f} {b[1]:8.3f} {b[2]:6.2f} {b[3]:7.0f} | "
          f"{o[0]-b[0]:+.3f} ms, {o[0]/b[0]:.2f}x the bare first call")
import os
clock = "wall time" if os.environ.get("SPARSEJIT_BENCH_CLOCK") == "wall" else "thread CPU time"
print(f"({clock}, ms; medians of 5 fresh processes each; ratio = first / steady of that process)")
PY
echo "raw results: $raw" >&2
