#!/usr/bin/env bash
# The test suite under ThreadSanitizer (issue 6): a Debug -O1 build with -DSPARSEJIT_TSAN=ON in
# build-tsan, then every parallel / concurrency test (the pool, partitions and assembly, every
# schedule on 1/2/3/7 threads, one context used from many threads, the kernel cache's single
# flight, the C API, SpGEMM plans sharing a kept structure, the push's row blocks, kept results),
# and the C programs (the LLVM backend loaded on a host's thread, tests/llvm_on_demand.c).
# TSAN_ALL=1 runs the whole suite instead (slow: TSan costs 5-15x).
# A reported race fails the run (halt_on_error). Prints how long the stage took.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
# Only the suites that run threads are built (the rest run under ASan); TSAN_ALL=1 builds all.
only='/test_(parallel|einsum_parallel|capi|kernel_cache|stress|block_pool|spgemm_structure|push_row_blocks|spare_handle)\.cpp$'
[ "${TSAN_ALL:-0}" = 1 ] && only=''
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
      -DSPARSEJIT_TSAN=ON -DSPARSEJIT_BUILD_BENCH=OFF -DSPARSEJIT_TEST_ONLY="$only" >/dev/null
cmake --build build-tsan -j2 --target sparsejit_tests sparsejit_c_api_smoke sparsejit_llvm_on_demand
built=$(date +%s)
echo "tsan build: $(( built - start )) s"
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
export SPARSEJIT_CACHE_DIR="$(mktemp -d)"
trap 'rm -rf "$SPARSEJIT_CACHE_DIR"' EXIT
if [ "${TSAN_ALL:-0}" = 1 ]; then
  ctest --test-dir build-tsan --output-on-failure -j2 --timeout 900
else
  ctest --test-dir build-tsan --output-on-failure -j2 --timeout 600 \
        -R '^((ThreadPool|WorkPartition|SparseAssembly|ParallelDeterminism|ParallelContext|ParallelEinsum|KernelCache|CApi|Stress|SpgemmStructure|SpareHandle|BlockPool|PushRowBlocks)\.|c_api_smoke$|llvm_on_demand_)'
fi
echo "== tsan stage finished in $(( $(date +%s) - start )) s (build $(( built - start )) s)"
