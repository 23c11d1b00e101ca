// Semirings as small structs of static functions, so kernels are templates over them and
// the compiler inlines add/mul. Values of type bool are stored as uint8_t (0 or 1).
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "sparsejit/sparsejit.h"
#include "src/dispatch.hpp"
#include "src/error.hpp"

namespace sj {

template <class V> struct PlusTimes {
  static constexpr sj_semiring id = SJ_SEMIRING_PLUS_TIMES;
  static V zero() { return V(0); }
  static V add(V a, V b) { return a + b; }
  static V mul(V a, V b) { return a * b; }
};
// Floating-point min and max propagate NaN: a NaN product makes the entry NaN whatever the
// order of the products. std::min / std::max alone drop a NaN that comes second (std::max(1,
// NaN) is 1), so the result depended on the order, and kernels starting from the identity
// (SIMD lanes, the JIT's accumulators) dropped what the serial fold from the first product
// kept. Otherwise as std::min(a, b) / std::max(a, b), equal values keeping a (so -0.0 and
// +0.0 as before). Integers have no NaN: b != b is false.
template <class V> struct MinPlus {
  static constexpr sj_semiring id = SJ_SEMIRING_MIN_PLUS;
  static V zero() { return std::numeric_limits<V>::infinity(); }
  static V add(V a, V b) { return (b < a || b != b) ? b : a; }
  static V mul(V a, V b) { return a + b; }
};
template <class V> struct MaxTimes {
  static constexpr sj_semiring id = SJ_SEMIRING_MAX_TIMES;
  static V zero() { return -std::numeric_limits<V>::infinity(); }
  static V add(V a, V b) { return (a < b || b != b) ? b : a; }
  static V mul(V a, V b) { return a * b; }
};
template <class V> struct OrAnd {
  static constexpr sj_semiring id = SJ_SEMIRING_OR_AND;
  static V zero() { return V(0); }
  static V add(V a, V b) { return V((a != V(0)) || (b != V(0))); }
  static V mul(V a, V b) { return V((a != V(0)) && (b != V(0))); }
};
template <class V> struct PlusPair {
  static constexpr sj_semiring id = SJ_SEMIRING_PLUS_PAIR;
  static V zero() { return V(0); }
  static V add(V a, V b) { return a + b; }
  static V mul(V, V) { return V(1); }
};

// The exact identity of S::add over V, where it has one: add(e, p) == p bit for bit for every
// p, NaN included, so an accumulator can start from it instead of testing for its first
// product (SpGEMM's values-only rows, the push's dense accumulator). Sums: -0.0 (0.0 + -0.0
// is +0.0, but -0.0 + p is p); integer min and max: the type's extremes. Floating-point min
// and max kernels test for each accumulator's first product instead (their +-inf became exact
// when NaN started to propagate, above, but no kernel's choice was re-measured for it).
template <class S> struct ExactIdentity { static constexpr bool exists = false; };
template <class V> struct ExactIdentity<PlusTimes<V>> {
  static constexpr bool exists = true;
  static V value() { return -V(0); }
};
template <class V> struct ExactIdentity<PlusPair<V>> {
  static constexpr bool exists = true;
  static V value() { return -V(0); }
};
template <class V> struct ExactIdentity<OrAnd<V>> {  // products are 0 or 1, and add(0, p) == p
  static constexpr bool exists = true;
  static V value() { return V(0); }
};
template <class V> struct ExactIdentity<MinPlus<V>> {
  static constexpr bool exists = std::is_integral_v<V>;
  static V value() { return std::numeric_limits<V>::max(); }
};
template <class V> struct ExactIdentity<MaxTimes<V>> {
  static constexpr bool exists = std::is_integral_v<V>;
  static V value() { return std::numeric_limits<V>::lowest(); }
};

// Calls f(SemiringType{}) for the runtime semiring; value type V is fixed by the caller.
// Bool (uint8_t) values serve only or-and; the ops layer refuses other pairings first.
template <class V, class F> decltype(auto) with_semiring(sj_semiring s, F&& f) {
  switch (s) {
    case SJ_SEMIRING_PLUS_TIMES: return f(PlusTimes<V>{});
    case SJ_SEMIRING_MIN_PLUS: return f(MinPlus<V>{});
    case SJ_SEMIRING_MAX_TIMES: return f(MaxTimes<V>{});
    case SJ_SEMIRING_OR_AND: return f(OrAnd<V>{});
    case SJ_SEMIRING_PLUS_PAIR: return f(PlusPair<V>{});
  }
  fail(SJ_ERR_INVALID_ARGUMENT, "unknown semiring ", static_cast<int>(s));
}

// Calls f(S{}, I{}, V{}) for a runtime index type, value type and semiring: the one place
// kernels are instantiated over all three. Bool values serve only or-and.
template <class F> decltype(auto) with_kernel_types(IndexType it, ValueType vt, sj_semiring s, F&& f) {
  return with_types(it, vt, [&](auto i, auto v) {
    using V = decltype(v);
    if constexpr (std::is_same_v<V, uint8_t>) {
      return f(OrAnd<V>{}, i, v);
    } else {
      return with_semiring<V>(s, [&](auto sr) { return f(sr, i, v); });
    }
  });
}

}  // namespace sj
