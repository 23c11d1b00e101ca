#!/bin/sh
# Builds and runs bench_einsum (index-notation kernels, issue 5) and prints its tables:
# fused vs transpose-then-compute vs auto on ../shared/data, the Splyce kernels SIMD vs
# scalar-only, and LLVM compile time cold / from the disk cache.
#   scripts/bench-einsum.sh [BUILD_DIR] [--quick] [--only compile|cases|splyce]
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-"$here/build-bench"}
shift 2>/dev/null || true
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSPARSEJIT_BUILD_TESTS=OFF -DSPARSEJIT_BUILD_BENCH=ON >/dev/null
cmake --build "$build" -j2 --target bench_einsum >/dev/null
"$build/bench/bench_einsum" "$@"
