#!/usr/bin/env bash
# Installs a built tree into a temporary prefix and uses it as an outside project would:
# find_package(sparsejit), pkg-config, and `nm -D` to check that only sj_* is exported.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
lib=$(ls "$prefix"/lib*/libsparsejit.so.0 2>/dev/null || ls "$prefix"/lib/*/libsparsejit.so.0)
libdir=$(dirname "$lib")
readelf -d "$lib" | grep -q 'SONAME.*libsparsejit.so.0' || { echo "SONAME is not libsparsejit.so.0"; exit 1; }
others=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^sj_' || true)
[ -z "$others" ] || { echo "exported symbols other than sj_*:"; echo "$others"; exit 1; }
readelf -d "$lib" | grep -q TEXTREL && { echo "libsparsejit.so has text relocations"; exit 1; }
cmake -S tests/consumer -B "$prefix/consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/consumer" >/dev/null
LD_LIBRARY_PATH="$libdir" "$prefix/consumer/consumer" data/karate.mtx
cc tests/c_api_smoke.c $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs sparsejit) -o "$prefix/pc_consumer"
LD_LIBRARY_PATH="$libdir" "$prefix/pc_consumer" data/karate.mtx
echo "check-install: find_package, pkg-config, SONAME and exports OK ($(nm -D --defined-only "$lib" | grep -c ' sj_') sj_* symbols)"
