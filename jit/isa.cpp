#include "jit/isa.hpp"

#include <asmjit/core.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <optional>
#include <string>
#include <string_view>

#include "src/environment.hpp"

namespace sj::jit {

namespace {

HostFeatures detect() {
  using F = asmjit::CpuFeatures::X86;
  const asmjit::CpuInfo& cpu = asmjit::CpuInfo::host();
  HostFeatures h;
  h.avx2 = cpu.hasFeature(F::kAVX2) && cpu.hasFeature(F::kBMI) && cpu.hasFeature(F::kBMI2) &&
           cpu.hasFeature(F::kPOPCNT) && cpu.hasFeature(F::kLZCNT);
  h.avx512 = h.avx2 && cpu.hasFeature(F::kAVX512_F) && cpu.hasFeature(F::kAVX512_VL) &&
             cpu.hasFeature(F::kAVX512_BW) && cpu.hasFeature(F::kAVX512_DQ);
  h.vp2intersect = h.avx512 && cpu.hasFeature(F::kAVX512_VP2INTERSECT);
  return h;
}

std::atomic<bool> g_warned{false};

void warn_once(sj_isa asked, sj_isa got) {
  if (!g_warned.exchange(true))
    spdlog::warn("sparsejit: ISA '{}' is not available on this CPU; using '{}'", isa_name(asked),
                 isa_name(got));
}

sj_isa best_host_isa() {
  const HostFeatures& h = host_features();
  return h.avx512 ? SJ_ISA_AVX512 : h.avx2 ? SJ_ISA_AVX2 : SJ_ISA_SCALAR;
}

}  // namespace

const HostFeatures& host_features() {
  static const HostFeatures features = detect();
  return features;
}

bool isa_supported(sj_isa isa) {
  switch (isa) {
    case SJ_ISA_AVX512: return host_features().avx512;
    case SJ_ISA_AVX2: return host_features().avx2;
    default: return true;
  }
}

sj_isa resolve_isa(sj_isa requested) {
  if (requested == SJ_ISA_AUTO) return default_isa();
  if (requested == SJ_ISA_SCALAR || isa_supported(requested)) return requested;
  sj_isa got = requested == SJ_ISA_AVX512 && host_features().avx2 ? SJ_ISA_AVX2 : SJ_ISA_SCALAR;
  warn_once(requested, got);
  return got;
}

sj_isa default_isa() {
  static const sj_isa isa = [] {
    const std::optional<std::string_view> env = env::value("SPARSEJIT_ISA");
    if (!env) return best_host_isa();
    std::optional<sj_isa> asked = parse_isa_name(*env);
    if (!asked) {
      env::report_bad("SPARSEJIT_ISA", *env, "one of auto|avx512|avx2|scalar", "auto");
      return best_host_isa();
    }
    if (*asked == SJ_ISA_AUTO) return best_host_isa();
    if (*asked == SJ_ISA_SCALAR || isa_supported(*asked)) return *asked;
    sj_isa got = *asked == SJ_ISA_AVX512 && host_features().avx2 ? SJ_ISA_AVX2 : SJ_ISA_SCALAR;
    warn_once(*asked, got);
    return got;
  }();
  return isa;
}

bool default_isa_includes(sj_isa tier) {
  const sj_isa have = default_isa();
  switch (tier) {
    case SJ_ISA_AVX512: return have == SJ_ISA_AVX512;
    case SJ_ISA_AVX2: return have == SJ_ISA_AVX512 || have == SJ_ISA_AVX2;
    default: return true;
  }
}

std::string_view isa_name(sj_isa isa) {
  switch (isa) {
    case SJ_ISA_AUTO: return "auto";
    case SJ_ISA_AVX512: return "avx512";
    case SJ_ISA_AVX2: return "avx2";
    case SJ_ISA_SCALAR: return "scalar";
  }
  return "?";
}

std::optional<sj_isa> parse_isa_name(std::string_view name) {
  if (name == "auto") return SJ_ISA_AUTO;
  if (name == "avx512") return SJ_ISA_AVX512;
  if (name == "avx2") return SJ_ISA_AVX2;
  if (name == "scalar") return SJ_ISA_SCALAR;
  return std::nullopt;
}

}  // namespace sj::jit
