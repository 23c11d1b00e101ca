#include "jit/coiter_spec.hpp"

#include "jit/isa.hpp"
#include "src/error.hpp"

namespace sj::jit {

uint64_t CoiterSpec::pack() const {
  uint64_t k = 0;
  int shift = 0;
  auto put = [&](uint64_t v, int bits) { k |= v << shift, shift += bits; };
  put(uint64_t(action), 2);
  put(uint64_t(value), 2);
  put(uint64_t(index), 1);
  put(uint64_t(semiring), 3);
  put(width, 5);
  put(phases, 3);
  put(uint64_t(method), 2);
  put(reassociate, 1);
  put(with_factor, 1);
  put(skip_empty, 1);
  put(skip_disjoint, 1);
  put(uint64_t(isa), 2);
  return k;
}

static std::string_view semiring_name(sj_semiring s) {
  switch (s) {
    case SJ_SEMIRING_PLUS_TIMES: return "plus-times";
    case SJ_SEMIRING_MIN_PLUS: return "min-plus";
    case SJ_SEMIRING_MAX_TIMES: return "max-times";
    case SJ_SEMIRING_OR_AND: return "or-and";
    case SJ_SEMIRING_PLUS_PAIR: return "plus-pair";
  }
  return "?";
}

std::string CoiterSpec::to_string() const {
  std::string s;
  s += jit::to_string(action);
  s += value == ValueType::F32 ? " f32" : " f64";
  s += index == IndexType::I32 ? " i32 " : " i64 ";
  s += semiring_name(semiring);
  s += " n" + std::to_string(width) + " p" + phase_mask_string(phases) + " ";
  s += jit::to_string(method);
  s += " isa=";
  s += isa_name(isa);
  if (reassociate) s += " reassoc";
  if (with_factor) s += " factor";
  if (skip_empty) s += " skip-empty";
  if (skip_disjoint) s += " skip-disjoint";
  return s;
}

void validate(const CoiterSpec& spec) {
  if (spec.value != ValueType::F32 && spec.value != ValueType::F64)
    fail(SJ_ERR_UNSUPPORTED, "coiteration kernels take f32 or f64 values");
  bool i32 = spec.index == IndexType::I32;
  if (!(spec.width == 4 || spec.width == 8 || (i32 && spec.width == 16)))
    fail(SJ_ERR_INVALID_ARGUMENT, "vector width ", int(spec.width), " is not one of 4, 8",
         i32 ? ", 16" : "", " for ", i32 ? "i32" : "i64", " coordinates");
  if (spec.phases > 7) fail(SJ_ERR_INVALID_ARGUMENT, "phase mask ", int(spec.phases), " > 7");
  if (int(spec.semiring) < 0 || int(spec.semiring) > SJ_SEMIRING_PLUS_PAIR)
    fail(SJ_ERR_INVALID_ARGUMENT, "unknown semiring ", int(spec.semiring));
  if (uint8_t(spec.method) > uint8_t(CoiterMethod::Native))
    fail(SJ_ERR_INVALID_ARGUMENT, "unknown intersection method ", int(spec.method));
  if (uint8_t(spec.action) > uint8_t(CoiterAction::Count))
    fail(SJ_ERR_INVALID_ARGUMENT, "unknown coiteration action ", int(spec.action));
  if (int(spec.isa) < 0 || int(spec.isa) > SJ_ISA_SCALAR)
    fail(SJ_ERR_INVALID_ARGUMENT, "unknown ISA ", int(spec.isa));
}

std::optional<uint8_t> parse_phase_mask(std::string_view text) {
  if (text.size() != 3) return std::nullopt;
  uint8_t m = 0;
  for (char c : text) {
    if (c != '0' && c != '1') return std::nullopt;
    m = uint8_t(m << 1 | (c == '1'));
  }
  return m;
}

std::string phase_mask_string(uint8_t phases) {
  std::string s(3, '0');
  for (int b = 0; b < 3; ++b)
    if (phases >> b & 1) s[2 - b] = '1';
  return s;
}

std::string_view to_string(CoiterAction action) {
  switch (action) {
    case CoiterAction::Dot: return "dot";
    case CoiterAction::Emit: return "emit";
    case CoiterAction::Count: return "count";
  }
  return "?";
}

std::string_view to_string(CoiterMethod method) {
  switch (method) {
    case CoiterMethod::Broadcast: return "broadcast";
    case CoiterMethod::Rotate: return "rotate";
    case CoiterMethod::Native: return "native";
  }
  return "?";
}

std::optional<CoiterMethod> parse_coiter_method(std::string_view name) {
  if (name == "broadcast") return CoiterMethod::Broadcast;
  if (name == "rotate") return CoiterMethod::Rotate;
  if (name == "native" || name == "vp2intersect") return CoiterMethod::Native;
  return std::nullopt;
}

}  // namespace sj::jit
