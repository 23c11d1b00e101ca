// Run-time CPU feature detection (asmjit's CpuInfo) and the ISA tier the code generators and
// the hand-written vector kernels use: avx512 (F+VL+BW+DQ on top of avx2), avx2
// (AVX2+BMI1/2+POPCNT+LZCNT) or scalar (portable C++). SPARSEJIT_ISA=auto|avx512|avx2|scalar
// overrides; asking for a tier the CPU lacks falls down to the best one it has, with one
// warning per process.
#pragma once
#include <optional>
#include <string_view>

#include "sparsejit/sparsejit.h"

namespace sj::jit {

struct HostFeatures {
  bool avx2 = false;          // AVX2 + BMI1 + BMI2 + POPCNT + LZCNT
  bool avx512 = false;        // AVX-512 F + VL + BW + DQ on top of avx2
  bool vp2intersect = false;  // AVX512_VP2INTERSECT (only meaningful with avx512)
};

// Detected once, cached.
const HostFeatures& host_features();

// Whether the host can run code of this tier (SJ_ISA_SCALAR and SJ_ISA_AUTO: always).
bool isa_supported(sj_isa isa);

// AUTO -> the environment's choice, else the best tier the host has. A tier the host lacks
// falls down (avx512 -> avx2 -> scalar) and logs one warning per process.
sj_isa resolve_isa(sj_isa requested);

// The process-wide choice: SPARSEJIT_ISA (read once) resolved against the host.
sj_isa default_isa();

// Whether the process-wide tier includes `tier` (avx512 includes avx2; every tier scalar). The
// hand-written kernels with AVX2 or AVX-512 paths ask this once, so SPARSEJIT_ISA caps them
// as it caps generated code.
bool default_isa_includes(sj_isa tier);

std::string_view isa_name(sj_isa isa);  // "auto", "avx512", "avx2", "scalar"
std::optional<sj_isa> parse_isa_name(std::string_view name);

}  // namespace sj::jit
