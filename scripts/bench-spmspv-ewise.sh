#!/usr/bin/env bash
# SpMSpV (x 0.1/1/10/50%) and B o A^T against GraphBLAS, Eigen and a hand-written
# transpose-then-merge; prints per-input lines and one summary table with geometric means.
# Usage: scripts/bench-spmspv-ewise.sh [build-dir] [bench args: --quick --no-synthetic --filter S]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-/tmp/build-spmspv}
shift || true
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j2 --target bench_compare_spmspv_ewise >/dev/null
exec taskset -c "${SJ_BENCH_CPU:-0}" "$build/bench/bench_compare_spmspv_ewise" "$@"
