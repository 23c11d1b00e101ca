#!/usr/bin/env bash
# The bindings and the C example against a built tree (default `build`, made by scripts/test.sh):
# Python (ctypes, Debian's /usr/bin/python3 with python3-scipy), Rust (cargo test --offline,
# no crates from outside), and examples/c built with only the installed-style header.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
lib="$build/libsparsejit.so"
[ -e "$lib" ] || { echo "ci-bindings: $lib not found (run scripts/test.sh first)"; exit 1; }
t0=$(date +%s)

echo "-- C example (only <sparsejit/sparsejit.h>)"
cc -std=c11 -Wall -Wextra -Werror -Iinclude examples/c/embed_example.c -L"$build" -lsparsejit -lm \
   -Wl,-rpath,"$build" -o "$build/embed_example"
"$build/embed_example" data/karate.mtx

echo "-- Python (ctypes) with /usr/bin/python3"
SPARSEJIT_LIBRARY="$lib" /usr/bin/python3 -m unittest discover -s bindings/python/tests -v

echo "-- Rust (cargo test --offline)"
command -v cargo >/dev/null || export PATH="$HOME/.cargo/bin:$PATH"
command -v cargo >/dev/null || { echo "ci-bindings: cargo not found"; exit 1; }
SPARSEJIT_LIB_DIR="$build" CARGO_TARGET_DIR="$build/rust-target" \
  cargo test --offline --quiet --manifest-path bindings/rust/sparsejit/Cargo.toml

echo "ci-bindings: C example, Python and Rust bindings OK in $(( $(date +%s) - t0 )) s"
