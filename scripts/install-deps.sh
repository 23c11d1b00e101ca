#!/usr/bin/env bash
# Installs the Debian 12 packages libsparsejit builds with, and the comparison libraries the
# benchmarks use. Does nothing when all are present. Needs root (or sudo).
set -euo pipefail
packages=(
  build-essential cmake pkg-config git
  libasmjit-dev llvm-16-dev libspdlog-dev libabsl-dev libgtest-dev libbenchmark-dev
  # fuzzing (tests/fuzz, scripts/ci-fuzz.sh): clang 14 and its libFuzzer/sanitizer runtime
  clang-14 libclang-rt-14-dev
  # comparison only (bench/, tests' independent checks): never linked into the library
  libgraphblas-dev libeigen3-dev libsuitesparse-dev python3-scipy
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
