#!/usr/bin/env bash
# Each operation on a small matrix planned at 1 and at 2 threads, the two plans alternated in
# one process: prints 2T/1T per operation (bench/threads_small.c says why). Needs 2 CPUs
# free; not pinned.
# Usage: scripts/threads-small.sh BUILD_DIR MATRIX.mtx [rounds] [calls]
#   BUILD_DIR holds libsparsejit.so (e.g. build or a Release build folder).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -lt 2 ]; then sed -n '2,6p' "$0" >&2; exit 2; fi
lib=$(realpath "$1")
exe=$(mktemp -d)/threads_small
trap 'rm -rf "$(dirname "$exe")"' EXIT
cc -O2 -std=c11 -Wall -Wextra -I"$root/include" "$root/bench/threads_small.c" -L"$lib" -lsparsejit \
  -Wl,-rpath,"$lib" -o "$exe"
"$exe" "${@:2}"
