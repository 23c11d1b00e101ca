// Row-wise SpMV (y = A*x, x dense) whose x values are fetched eight at a time by a gather
// (AVX-512F; a 256-bit one for float values with int32 coordinates), for an x too large for
// L2. Each row still starts from its first product and adds the others one at a time in
// increasing column order, so y is bit-identical to the scalar loop (kernels/spmspv_kernels.hpp,
// spmv_rows) and to the reference: only the loads and the products are vector operations, and
// a product is the same in a lane as alone. A row no longer than one block never reaches a
// gather.
//
// Why: once x spills out of L2 the scalar loop waits on its loads of x; eight loads issued by
// one instruction keep more of them in flight. sj_spmv, the two loops alternated in one
// process, uniform n x n with 16 entries a row, this VM (AMD EPYC, 1 MiB L2, 32 MiB L3):
// - double, one thread: n = 600k (x 4.8 MB) 19.0 -> 13.2 ms, 1M (8 MB) 29.6 -> 22.3 ms (40 a
//   row 67.1 -> 45.4 ms, 4 a row equal), 1.4M (11 MB) 45.2 -> 39.0 ms, 2M (16 MB) 81.3 -> 82.2
//   ms, 3M (24 MB) 143 -> 235 ms; two threads: 600k 9.3 -> 7.3 ms, 1M 16.4 -> 13.2 ms, 2M 44.1
//   -> 54.6 ms;
// - float, one thread: 600k 13.8 -> 9.4 ms, 1.2M 30.9 -> 20.1 ms, 2M (8 MB) 54.2 -> 34.8 ms.
//   Blocks of sixteen (one 512-bit gather) gave only 1.08-1.31x: a row of ~16 then reaches a
//   block only with 17 entries or more.
// Once x no longer stays in L3 beside A's stream, a gather waits for its slowest load and
// loses; below L2 (a stand-alone copy: 100k columns equal, 60k 1.2x slower) it only costs. So
// the loop runs for an x between L2 and a quarter of L3 (src/gather_window.hpp). Summing the
// eight products in a tree (not bit-identical) was tried only for comparison: 1.06x faster at
// 16 a row, 1.4x at 64, where the in-order sum's latency bounds the loop.
//
// Floating point contraction: a multiply fused with the following add would change bits. The
// library is built with -ffp-contract=off (CMakeLists.txt), which this AVX-512 code (FMA
// available) relies on.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "jit/isa.hpp"
#include "src/gather_window.hpp"
#include "src/semiring.hpp"

namespace sj::spmv_gather_avx512 {

// Whether the gather loop runs: the AVX-512 tier (jit/isa.hpp: the CPU, capped by SPARSEJIT_ISA).
inline bool available() {
  static const bool yes = jit::default_isa_includes(SJ_ISA_AVX512);
  return yes;
}

// The semirings whose products are one vector operation: times, or plus for min-plus.
template <class S> struct VectorProduct : std::false_type {};
struct Multiply : std::true_type {
  [[gnu::target("avx512f"), gnu::always_inline]] static __m512d of(__m512d a, __m512d b) { return _mm512_mul_pd(a, b); }
  [[gnu::target("avx512f"), gnu::always_inline]] static __m512 of(__m512 a, __m512 b) { return _mm512_mul_ps(a, b); }
  [[gnu::target("avx512f"), gnu::always_inline]] static __m256 of(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
};
struct Add : std::true_type {
  [[gnu::target("avx512f"), gnu::always_inline]] static __m512d of(__m512d a, __m512d b) { return _mm512_add_pd(a, b); }
  [[gnu::target("avx512f"), gnu::always_inline]] static __m512 of(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
  [[gnu::target("avx512f"), gnu::always_inline]] static __m256 of(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
};
template <class V> struct VectorProduct<PlusTimes<V>> : Multiply {};
template <class V> struct VectorProduct<MaxTimes<V>> : Multiply {};
template <class V> struct VectorProduct<MinPlus<V>> : Add {};

// One block of products: kLanes values of x gathered at kLanes coordinates, each with its value
// of A. The gathers are the masked forms with a zero source: GCC 12's unmasked ones pass an
// undefined register as the source and warn (-Wmaybe-uninitialized) where they are inlined.
template <class I, class V> struct Block {
  static constexpr int kLanes = 0;
};
template <> struct Block<int32_t, double> {
  static constexpr int kLanes = 8;
  template <class Op>
  [[gnu::target("avx512f"), gnu::always_inline]] static void products(const int32_t* c, const double* a, const double* x,
                                                                      double* out) {
    const __m256i idx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c));
    _mm512_store_pd(out, Op::of(_mm512_loadu_pd(a), _mm512_mask_i32gather_pd(_mm512_setzero_pd(), 0xFF, idx, x, 8)));
  }
};
template <> struct Block<int64_t, double> {
  static constexpr int kLanes = 8;
  template <class Op>
  [[gnu::target("avx512f"), gnu::always_inline]] static void products(const int64_t* c, const double* a, const double* x,
                                                                      double* out) {
    const __m512i idx = _mm512_loadu_si512(c);
    _mm512_store_pd(out, Op::of(_mm512_loadu_pd(a), _mm512_mask_i64gather_pd(_mm512_setzero_pd(), 0xFF, idx, x, 8)));
  }
};
template <> struct Block<int32_t, float> {
  static constexpr int kLanes = 8;
  template <class Op>
  [[gnu::target("avx512f"), gnu::always_inline]] static void products(const int32_t* c, const float* a, const float* x,
                                                                      float* out) {
    const __m256i idx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c));
    const __m256 all = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
    _mm256_store_ps(out, Op::of(_mm256_loadu_ps(a), _mm256_mask_i32gather_ps(_mm256_setzero_ps(), x, idx, all, 4)));
  }
};
template <> struct Block<int64_t, float> {
  static constexpr int kLanes = 8;
  template <class Op>
  [[gnu::target("avx512f"), gnu::always_inline]] static void products(const int64_t* c, const float* a, const float* x,
                                                                      float* out) {
    const __m512i idx = _mm512_loadu_si512(c);
    _mm256_store_ps(out, Op::of(_mm256_loadu_ps(a), _mm512_mask_i64gather_ps(_mm256_setzero_ps(), 0xFF, idx, x, 4)));
  }
};

template <class S, class I, class V>
inline constexpr bool supports = VectorProduct<S>::value && (Block<I, V>::kLanes > 0);

// Whether an SpMV over `cols` columns of x takes the gather loop: for an x in the gather
// window (src/gather_window.hpp), where the CPU has AVX-512F.
template <class S, class I, class V> bool chosen(int64_t cols) {
  if constexpr (!supports<S, I, V>) {
    return false;
  } else {
    return available() && gather_window::pays(cols * static_cast<int64_t>(sizeof(V)));
  }
}

// y(i) for rows [r0, r1): the first product alone, then blocks of kLanes products (gathered,
// combined in one operation, added in order), then the rest one at a time; zero() for an
// empty row.
template <class S, class I, class V>
[[gnu::target("avx512f")]] void rows(const int64_t* pos, const I* crd, const V* val, const V* __restrict x,
                                     V* __restrict y, int64_t r0, int64_t r1) {
  constexpr int L = Block<I, V>::kLanes;
  alignas(64) V prod[L];
  for (int64_t i = r0; i < r1; ++i) {
    const int64_t b = pos[i], e = pos[i + 1];
    if (b == e) {
      y[i] = S::zero();
      continue;
    }
    V acc = S::mul(val[b], x[crd[b]]);
    int64_t p = b + 1;
    for (; p + L <= e; p += L) {
      Block<I, V>::template products<VectorProduct<S>>(crd + p, val + p, x, prod);
      for (int k = 0; k < L; ++k) acc = S::add(acc, prod[k]);
    }
    for (; p < e; ++p) acc = S::add(acc, S::mul(val[p], x[crd[p]]));
    y[i] = acc;
  }
}

}  // namespace sj::spmv_gather_avx512
