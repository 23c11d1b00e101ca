#!/usr/bin/env bash
# CI stage: build the libFuzzer targets (tests/fuzz) with clang 14, ASan and UBSan, then run
# each for a fixed number of inputs from a fixed seed (the same inputs on every run, so CI is
# reproducible; a time cap of 3x the budget guards slow machines), two at a time, on the committed seeds (tests/fuzz/corpus) plus
# small files and prefixes from ../shared/data when present. Any crash, leak, sanitizer
# report or broken invariant fails the stage; the input is kept in <build>/fuzz-artifacts.
#   scripts/ci-fuzz.sh [seconds per target, default 20] [build dir, default build-fuzz]
# FUZZ_SEED=random explores new inputs instead (for local campaigns, not CI).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
build=${2:-build-fuzz}
start=$(date +%s)

CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DSPARSEJIT_FUZZ=ON -DSPARSEJIT_BUILD_TESTS=OFF \
  -DSPARSEJIT_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j2 --target sparsejit_fuzz
echo "ci-fuzz: built in $(( $(date +%s) - start )) s"

work=$(mktemp -d)
# The cache-entry target keeps its folder here (tmpfs when there is one: it fsyncs a lot).
shm=$(mktemp -d /dev/shm/sj-ci-fuzz-XXXXXX 2>/dev/null || mktemp -d)
export SPARSEJIT_FUZZ_TMP="$shm"
trap 'rm -rf "$work" "$shm"' EXIT
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"

# Seeds from the real data: small files whole, larger ones cut to their first 3 KB at a line end.
data=${SPARSEJIT_DATA_DIR:-../shared/data}
seed_from() {  # seed_from DIR EXT TARGET
  local dir=$1 ext=$2 out="$work/seeds-$3"
  mkdir -p "$out"
  [ -d "$dir" ] || return 0
  for f in "$dir"/*."$ext"; do
    [ -f "$f" ] || continue
    head -c 3072 "$f" | sed '$d' >"$out/$(basename "$f")"
  done
}
seed_from "$data/matrices" mtx fuzz_matrix_market
seed_from "$data/tensors" tns fuzz_frostt

targets=$(cd "$build/tests/fuzz" && ls fuzz_* | grep -v '\.' || true)
failed=0
# Inputs per target for the default 20 s on the 2-core CI machine (about 2/3 of its measured rate).
runs_for() {
  local per20
  case $1 in
    fuzz_capi_ops) per20=18000 ;; fuzz_cache_entry) per20=20000 ;; fuzz_einsum) per20=250000 ;;
    fuzz_frostt) per20=55000 ;; fuzz_matrix_market) per20=330000 ;; fuzz_tensor_create) per20=50000 ;;
    *) per20=20000 ;;
  esac
  echo $(( per20 * secs / 20 ))
}
seed_args=(-seed=20261130)
[ "${FUZZ_SEED:-}" = random ] && seed_args=()
run_one() {
  local t=$1
  mkdir -p "$work/corpus-$t"
  local seeds=("tests/fuzz/corpus/$t")
  [ -d "$work/seeds-$t" ] && seeds+=("$work/seeds-$t")
  if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     "$build/tests/fuzz/$t" -runs="$(runs_for "$t")" "${seed_args[@]}" -max_total_time=$(( secs * 3 )) -timeout=20 -rss_limit_mb=2048 -max_len=4096 \
       -print_final_stats=1 -artifact_prefix="$artifacts/$t-" "$work/corpus-$t" "${seeds[@]}" \
       >"$work/$t.log" 2>&1; then
    echo "ci-fuzz: $t ok: $(grep -E 'stat::number_of_executed_units' "$work/$t.log" | awk '{print $2}') executions"
  else
    echo "ci-fuzz: $t FAILED"; tail -60 "$work/$t.log"; return 1
  fi
}
pids=()
for t in $targets; do
  run_one "$t" & pids+=($!)
  if [ ${#pids[@]} -ge 2 ]; then wait "${pids[0]}" || failed=1; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done
echo "ci-fuzz: finished in $(( $(date +%s) - start )) s"
[ $failed -eq 0 ] || { echo "ci-fuzz: crashes kept in $artifacts"; exit 1; }
