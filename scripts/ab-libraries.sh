#!/usr/bin/env bash
# Times two builds of the library on the same call in one process, alternated
# (bench/ab_libraries.c says why). Build the old commit's library in another build folder,
# e.g. `git worktree add /tmp/old HEAD~1 && cmake -S /tmp/old -B /tmp/build-old
# -DCMAKE_BUILD_TYPE=Release -DSPARSEJIT_BUILD_TESTS=OFF -DSPARSEJIT_BUILD_BENCH=OFF &&
# cmake --build /tmp/build-old --target sparsejit`, then:
# Usage: scripts/ab-libraries.sh OLD/libsparsejit.so NEW/libsparsejit.so MATRIX.mtx OP [x_entries] [rounds] [calls]
#   OP: spmspv | spmspv-plan | spmspv-into | spgemm | spgemm-recompute. Pinned to one CPU (SJ_BENCH_CPU, default 0).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -lt 4 ]; then sed -n '2,8p' "$0" >&2; exit 2; fi
exe=$(mktemp -d)/ab_libraries
trap 'rm -rf "$(dirname "$exe")"' EXIT
cc -O2 -std=c11 -Wall -Wextra -I"$root/include" "$root/bench/ab_libraries.c" -ldl -o "$exe"
taskset -c "${SJ_BENCH_CPU:-0}" "$exe" "$(realpath "$1")" "$(realpath "$2")" "${@:3}"
