#!/usr/bin/env bash
# The test suite under ThreadSanitizer (issue 6): a Debug -O1 build with -DSPARSEJIT_TSAN=ON in
# build-tsan, then every parallel / concurrency test, then the rest of the suite while it fits
# in a time budget (TSAN_BUDGET_S, default 420 s of test time). A reported race fails the run
# (halt_on_error). Prints how long the stage took.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
budget=${TSAN_BUDGET_S:-420}
# test_reference_kernels.cpp takes minutes to build and runs no threads: left out here (ASan covers it).
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
      -DSPARSEJIT_TSAN=ON -DSPARSEJIT_BUILD_BENCH=OFF -DSPARSEJIT_TEST_EXCLUDE='test_reference_kernels' >/dev/null
cmake --build build-tsan -j2 --target sparsejit_tests
built=$(date +%s)
echo "tsan build: $(( built - start )) s"
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
export SPARSEJIT_CACHE_DIR="$(mktemp -d)"
trap 'rm -rf "$SPARSEJIT_CACHE_DIR"' EXIT
# Concurrency first: the pool, partitions, every schedule on 1/2/3/7 threads, one context used
# from many threads, the kernel cache's single flight.
ctest --test-dir build-tsan --output-on-failure -j2 -R "^(ThreadPool|WorkPartition|SparseAssembly|ParallelDeterminism|ParallelContext|KernelCache)\." \
      --timeout 600
# The rest, as far as the budget goes (each test is its own process under ctest).
rest_budget=$(( budget - ($(date +%s) - built) ))
if [ "$rest_budget" -gt 30 ]; then
  ctest --test-dir build-tsan --output-on-failure -j2 \
        -E "^(ThreadPool|WorkPartition|SparseAssembly|ParallelDeterminism|ParallelContext|KernelCache)\.|^c_api_smoke$" \
        --stop-time "$(date -d "+${rest_budget} seconds" +%H:%M:%S)" --timeout 300
else
  echo "tsan: no time left for the rest of the suite"
fi
echo "== tsan stage finished in $(( $(date +%s) - start )) s"
