#!/usr/bin/env bash
# The main job: build the CLI and run the runtime on a real matrix shipped in data/, showing
# what it chose (explain) and how long the first and later calls took, for several operations.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j2 --target sparsejit_cli
m=${1:-data/cage8.mtx}
for op in spgemm spmspv ewise-mult-t; do
  build/sparsejit run "$op" "$m" --repeat 20
done
build/sparsejit run spgemm "$m" --explain --repeat 5
