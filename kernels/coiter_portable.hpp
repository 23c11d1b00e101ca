// Portable scalar coiteration kernels with the C ABI of jit/coiter_spec.hpp: the exactness
// oracle for generated kernels and their fallback when code generation is impossible.
// Written for clarity: the branchy two-finger merge, products accumulated in coordinate
// order starting from the first product (the contract every dot kernel matches).
#pragma once
#include <cstdint>

#include "jit/coiter_spec.hpp"
#include "src/semiring.hpp"

namespace sj::kernels {

template <class I, class V, class S, bool WithFactor>
int64_t coiter_dot_portable(const I* ac, const V* av, int64_t na, const I* bc, const V* bv,
                            int64_t nb, V* result) {
  int64_t i = 0, j = 0, count = 0;
  V acc{};
  while (i < na && j < nb) {
    if (ac[i] < bc[j]) {
      ++i;
    } else if (bc[j] < ac[i]) {
      ++j;
    } else {
      V p = S::mul(av[i], bv[j]);
      acc = count == 0 ? p : S::add(acc, p);
      ++count, ++i, ++j;
    }
  }
  if (count > 0) *result = WithFactor ? S::mul(acc, *result) : acc;
  return count;
}

template <class I, class V, class S>
int64_t coiter_emit_portable(const I* ac, const V* av, int64_t na, const I* bc, const V* bv,
                             int64_t nb, I* out_crd, V* out_val) {
  int64_t i = 0, j = 0, count = 0;
  while (i < na && j < nb) {
    if (ac[i] < bc[j]) {
      ++i;
    } else if (bc[j] < ac[i]) {
      ++j;
    } else {
      out_crd[count] = ac[i];
      out_val[count] = S::mul(av[i], bv[j]);
      ++count, ++i, ++j;
    }
  }
  return count;
}

template <class I>
int64_t coiter_count_portable(const I* ac, int64_t na, const I* bc, int64_t nb) {
  int64_t i = 0, j = 0, count = 0;
  while (i < na && j < nb) {
    if (ac[i] < bc[j]) {
      ++i;
    } else if (bc[j] < ac[i]) {
      ++j;
    } else {
      ++count, ++i, ++j;
    }
  }
  return count;
}

// The branchless scalar two-finger dot (a baseline of the Splyce evaluation): both indices
// advance by comparison results, the product is selected rather than branched on.
template <class I, class V, class S, bool WithFactor>
int64_t coiter_dot_branchless(const I* ac, const V* av, int64_t na, const I* bc, const V* bv,
                              int64_t nb, V* result) {
  int64_t i = 0, j = 0, count = 0;
  V acc = S::zero();
  while (i < na && j < nb) {
    I x = ac[i], y = bc[j];
    bool eq = x == y;
    V p = S::mul(av[i], bv[j]);
    V next = count == 0 ? p : S::add(acc, p);
    acc = eq ? next : acc;
    count += eq;
    i += x <= y;
    j += y <= x;
  }
  if (count > 0) *result = WithFactor ? S::mul(acc, *result) : acc;
  return count;
}

// The portable kernel for a spec, as an untyped function pointer with the spec's ABI
// (never null for a valid spec). Ignores width, phases, method, isa and the skip flags.
template <class I, class V>
void* coiter_portable_fn_typed(const jit::CoiterSpec& spec) {
  if (spec.action == jit::CoiterAction::Count)
    return reinterpret_cast<void*>(&coiter_count_portable<I>);
  return with_semiring<V>(spec.semiring, [&](auto s) -> void* {
    using S = decltype(s);
    if (spec.action == jit::CoiterAction::Emit)
      return reinterpret_cast<void*>(&coiter_emit_portable<I, V, S>);
    return spec.with_factor ? reinterpret_cast<void*>(&coiter_dot_portable<I, V, S, true>)
                            : reinterpret_cast<void*>(&coiter_dot_portable<I, V, S, false>);
  });
}

inline void* coiter_portable_fn(const jit::CoiterSpec& spec) {
  bool i64 = spec.index == IndexType::I64, f64 = spec.value == ValueType::F64;
  if (i64) return f64 ? coiter_portable_fn_typed<int64_t, double>(spec)
                      : coiter_portable_fn_typed<int64_t, float>(spec);
  return f64 ? coiter_portable_fn_typed<int32_t, double>(spec)
             : coiter_portable_fn_typed<int32_t, float>(spec);
}

}  // namespace sj::kernels
