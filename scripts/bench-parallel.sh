#!/usr/bin/env bash
# Parallel scaling table (issue 6): builds bench_parallel (release) and prints 1 vs 2 threads
# (or the counts --threads lists) per operation, ours against GraphBLAS with the same thread
# count, push SpMSpV split by row blocks, cuts and buckets, and static vs dynamic row partitioning on a
# skewed power-law input. The machine is shared: run it when `uptime` shows a low load; the load
# average before and after is printed with the table.
# Usage: scripts/bench-parallel.sh [build-dir] [--quick | --large] [--threads 1,2,4,...] [--rounds N] [--only TEXT]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then build=$1; shift; fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j2 --target bench_parallel >/dev/null
"$build/bench/bench_parallel" "$@"
