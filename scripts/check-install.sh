#!/usr/bin/env bash
# Installs a built tree into a temporary prefix and uses it as an outside project would:
# find_package(sparsejit) with the project's version, pkg-config, the SONAME and version of the
# library, `nm -D` to check that only sj_* is exported, that the LLVM module is installed and
# found beside the library (which does not link libLLVM), and that the installed header
# documents every function (scripts/check-header-docs.py).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
lib=$(ls "$prefix"/lib*/libsparsejit.so.0 2>/dev/null || ls "$prefix"/lib/*/libsparsejit.so.0)
libdir=$(dirname "$lib")
readelf -d "$lib" | grep -q 'SONAME.*libsparsejit.so.0' || { echo "SONAME is not libsparsejit.so.0"; exit 1; }
version=$(sed -n 's/^project(sparsejit VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[ "$(readlink "$lib")" = "libsparsejit.so.$version" ] ||
  { echo "libsparsejit.so.0 -> $(readlink "$lib"), expected libsparsejit.so.$version"; exit 1; }
pc_version=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --modversion sparsejit)
[ "$pc_version" = "$version" ] || { echo "pkg-config says version $pc_version, expected $version"; exit 1; }
others=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^sj_' || true)
[ -z "$others" ] || { echo "exported symbols other than sj_*:"; echo "$others"; exit 1; }
readelf -d "$lib" | grep -q TEXTREL && { echo "libsparsejit.so has text relocations"; exit 1; }
# LLVM is a module loaded on first use (jit/llvm_module.hpp), installed beside the library.
readelf -d "$lib" | grep -q 'NEEDED.*libLLVM' && { echo "libsparsejit.so links libLLVM"; exit 1; }
[ -f "$libdir/libsparsejit-llvm.so" ] || { echo "libsparsejit-llvm.so is not installed in $libdir"; exit 1; }
/usr/bin/python3 scripts/check-header-docs.py "$prefix/include/sparsejit/sparsejit.h"
cmake -S tests/consumer -B "$prefix/consumer" -DCMAKE_PREFIX_PATH="$prefix" -DSPARSEJIT_WANT_VERSION="$version" >/dev/null
cmake --build "$prefix/consumer" >/dev/null
LD_LIBRARY_PATH="$libdir" "$prefix/consumer/consumer" data/karate.mtx
cc tests/c_api_smoke.c $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs sparsejit) -o "$prefix/pc_consumer"
LD_LIBRARY_PATH="$libdir" "$prefix/pc_consumer" data/karate.mtx
cc tests/llvm_on_demand.c $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs sparsejit) -o "$prefix/llvm_consumer"
LD_LIBRARY_PATH="$libdir" "$prefix/llvm_consumer" loads "$(cd "$libdir" && pwd -P)"
# The installed command (linked with the static library) finds the installed module from its
# own folder, wherever the prefix is: ld.so's trace names the file it loaded.
explain=$(LD_DEBUG=files SPARSEJIT_CACHE_DIR="$prefix/cache" "$prefix/bin/sparsejit" einsum "a(i) = B(i,j) * C(j,i)" \
            --tensor B=data/karate.mtx:csr --tensor C=data/karate.mtx --explain 2>&1)
grep -q "kernel: LLVM ORC, from compiled" <<<"$explain" || { echo "the installed sparsejit compiled nothing:"; echo "$explain"; exit 1; }
grep -q "file=$libdir/libsparsejit-llvm.so " <<<"$explain" ||
  { echo "the installed sparsejit did not load $libdir/libsparsejit-llvm.so:"; grep "libsparsejit-llvm" <<<"$explain"; exit 1; }
echo "check-install: find_package and pkg-config (version $version), SONAME, exports and header docs OK ($(nm -D --defined-only "$lib" | grep -c ' sj_') sj_* symbols)"
