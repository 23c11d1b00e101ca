// The push's column walk with runs of four consecutive rows done in AVX2 registers
// (kernels/spmspv_kernels.hpp, push_accumulate). Finite-element and other mesh matrices store
// the unknowns of one node next to each other, so a column's rows come in runs: bcsstk16 has
// 81% of its entries in runs of four, bayer10 51%, bcsstk13 46%. Four products of a run are
// one load of A's values, one multiply, one load-add-blend-store of the accumulators, one
// 4-byte read and write of the marks, and (when the rows are new) one store of four touched
// rows: ~18 instructions where the scalar loop takes ~50 and a first-touch branch per row.
//
// Exactness: each accumulator still adds its products in increasing j (a column is one j), as
// S::add(acc, S::mul(a, x)) with the same operands, and a row new to the accumulator takes its
// product unchanged (a blend, not an addition to a stale value). The functions are compiled
// for AVX2 without FMA, so a multiply and an add stay two roundings. min and max are vminp /
// vmaxp with the product first, which is std::min(acc, p) and std::max(acc, p) exactly, signed
// zeros included ((p < acc) ? p : acc, (acc < p) ? p : acc), then a NaN product blended in
// (keep_nan), as MinPlus / MaxTimes::add propagate it (src/semiring.hpp). With the dense
// accumulator (Dense) a row starts at S's exact identity (ExactIdentity: -0.0 for sums), so
// adding its first product gives that product unchanged, and no blend is needed. Plus-times,
// min-plus, max-times and plus-pair over f32 and f64 have the vector form; or-and over bool
// walks every column one row at a time.
#pragma once
#include <cstdint>

namespace sj::push_runs {

// One product into the accumulator. Sparse (Dense false): a row's first product is taken as
// is and marked and listed, later ones are added (the scalar push's step, and the run walk's
// outside runs). Dense: the accumulators started at S's exact identity, so every product is
// added and its row marked, with no test and no list.
template <class S, bool Dense = false, class I, class V>
inline void add_one(I i, V prod, V* acc, uint8_t* mark, I* list, int64_t& cnt) {
  if constexpr (Dense) {
    acc[i] = S::add(acc[i], prod);
    mark[i] = 1;
  } else if (mark[i]) {
    acc[i] = S::add(acc[i], prod);
  } else {
    mark[i] = 1;
    acc[i] = prod;
    list[cnt++] = i;
  }
}

}  // namespace sj::push_runs

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "jit/isa.hpp"
#include "src/semiring.hpp"

#define SJ_PUSH_RUNS_AVAILABLE 1

namespace sj::push_runs {

// Whether the AVX2 column walk runs: the AVX2 tier (jit/isa.hpp: the CPU, capped by
// SPARSEJIT_ISA). Inlined: it is read on every push call.
[[gnu::always_inline]] inline bool available() {
  static const bool yes = jit::default_isa_includes(SJ_ISA_AVX2);
  return yes;
}

// Semiring and value types with a vector form.
template <class S, class V>
constexpr bool kVectorised = (std::is_same_v<V, double> || std::is_same_v<V, float>) &&
                             (std::is_same_v<S, PlusTimes<V>> || std::is_same_v<S, MinPlus<V>> ||
                              std::is_same_v<S, MaxTimes<V>> || std::is_same_v<S, PlusPair<V>>);

// Four values of V in one register, and the operations the run needs.
template <class V> struct Quad;
template <> struct Quad<double> {
  using R = __m256d;
  [[gnu::target("avx2"), gnu::always_inline]] static R load(const double* p) { return _mm256_loadu_pd(p); }
  [[gnu::target("avx2"), gnu::always_inline]] static void store(double* p, R v) { _mm256_storeu_pd(p, v); }
  [[gnu::target("avx2"), gnu::always_inline]] static R broadcast(double v) { return _mm256_set1_pd(v); }
  [[gnu::target("avx2"), gnu::always_inline]] static R mul(R a, R b) { return _mm256_mul_pd(a, b); }
  [[gnu::target("avx2"), gnu::always_inline]] static R add(R a, R b) { return _mm256_add_pd(a, b); }
  [[gnu::target("avx2"), gnu::always_inline]] static R min(R a, R b) { return _mm256_min_pd(a, b); }
  [[gnu::target("avx2"), gnu::always_inline]] static R max(R a, R b) { return _mm256_max_pd(a, b); }
  // r, but p in the lanes where p is NaN.
  [[gnu::target("avx2"), gnu::always_inline]] static R keep_nan(R r, R p) {
    return _mm256_blendv_pd(r, p, _mm256_cmp_pd(p, p, _CMP_UNORD_Q));
  }
  // Lane r of `touched` where mark byte r of `marks` is set, else lane r of `fresh`.
  [[gnu::target("avx2"), gnu::always_inline]] static R select(uint32_t marks, R touched, R fresh) {
    const __m256i wide = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(static_cast<int>(marks)));
    const __m256i set = _mm256_cmpgt_epi64(wide, _mm256_setzero_si256());
    return _mm256_blendv_pd(fresh, touched, _mm256_castsi256_pd(set));
  }
};
template <> struct Quad<float> {
  using R = __m128;
  [[gnu::target("avx2"), gnu::always_inline]] static R load(const float* p) { return _mm_loadu_ps(p); }
  [[gnu::target("avx2"), gnu::always_inline]] static void store(float* p, R v) { _mm_storeu_ps(p, v); }
  [[gnu::target("avx2"), gnu::always_inline]] static R broadcast(float v) { return _mm_set1_ps(v); }
  [[gnu::target("avx2"), gnu::always_inline]] static R mul(R a, R b) { return _mm_mul_ps(a, b); }
  [[gnu::target("avx2"), gnu::always_inline]] static R add(R a, R b) { return _mm_add_ps(a, b); }
  [[gnu::target("avx2"), gnu::always_inline]] static R min(R a, R b) { return _mm_min_ps(a, b); }
  [[gnu::target("avx2"), gnu::always_inline]] static R max(R a, R b) { return _mm_max_ps(a, b); }
  [[gnu::target("avx2"), gnu::always_inline]] static R keep_nan(R r, R p) {
    return _mm_blendv_ps(r, p, _mm_cmp_ps(p, p, _CMP_UNORD_Q));
  }
  [[gnu::target("avx2"), gnu::always_inline]] static R select(uint32_t marks, R touched, R fresh) {
    const __m128i wide = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(marks)));
    const __m128i set = _mm_cmpgt_epi32(wide, _mm_setzero_si128());
    return _mm_blendv_ps(fresh, touched, _mm_castsi128_ps(set));
  }
};

// S's multiply and add on four lanes: mul(values of A, x broadcast), add(accumulators, products).
template <class S, class V> struct QuadOps {
  using Q = Quad<V>;
  using R = typename Q::R;
  [[gnu::target("avx2"), gnu::always_inline]] static R mul(R a, R xv) {
    if constexpr (std::is_same_v<S, MinPlus<V>>) return Q::add(a, xv);
    else if constexpr (std::is_same_v<S, PlusPair<V>>) return Q::broadcast(V(1));
    else return Q::mul(a, xv);
  }
  [[gnu::target("avx2"), gnu::always_inline]] static R add(R acc, R prod) {
    if constexpr (std::is_same_v<S, MinPlus<V>>) return Q::keep_nan(Q::min(prod, acc), prod);
    else if constexpr (std::is_same_v<S, MaxTimes<V>>) return Q::keep_nan(Q::max(prod, acc), prod);
    else return Q::add(acc, prod);
  }
};

// Rows first .. first+3 appended to the touched list.
template <class I> [[gnu::target("avx2"), gnu::always_inline]] inline void append4(I* list, I first) {
  if constexpr (sizeof(I) == 4) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(list),
                     _mm_add_epi32(_mm_set1_epi32(static_cast<int32_t>(first)), _mm_setr_epi32(0, 1, 2, 3)));
  } else {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(list),
                        _mm256_add_epi64(_mm256_set1_epi64x(static_cast<int64_t>(first)), _mm256_setr_epi64x(0, 1, 2, 3)));
  }
}

// Four consecutive rows first .. first+3 with the products in `prod` (Dense: as add_one).
template <class S, bool Dense, class I, class V>
[[gnu::target("avx2"), gnu::always_inline]] inline void add_four(I first, typename Quad<V>::R prod, V* acc, uint8_t* mark,
                                                                 I* list, int64_t& cnt) {
  constexpr uint32_t kAllSet = 0x01010101u;
  if constexpr (Dense) {
    Quad<V>::store(acc + first, QuadOps<S, V>::add(Quad<V>::load(acc + first), prod));
    std::memcpy(mark + first, &kAllSet, 4);
    return;
  }
  uint32_t marks;
  std::memcpy(&marks, mark + first, 4);
  const typename Quad<V>::R sum = QuadOps<S, V>::add(Quad<V>::load(acc + first), prod);
  Quad<V>::store(acc + first, Quad<V>::select(marks, sum, prod));
  if (marks == kAllSet) return;
  std::memcpy(mark + first, &kAllSet, 4);
  if (marks == 0) {  // a node's rows are usually new together
    append4(list + cnt, first);
    cnt += 4;
    return;
  }
  for (int r = 0; r < 4; ++r)
    if (!((marks >> (8 * r)) & 0xff)) list[cnt++] = static_cast<I>(first + r);
}

// Column entries [q, e) of A (rows crd, values val) times xj into the accumulator; returns
// the new touched count. Dense: the dense accumulator (add_one).
template <class S, bool Dense, class I, class V>
[[gnu::target("avx2")]] int64_t column(const I* crd, const V* val, int64_t q, int64_t e, V xj, V* acc, uint8_t* mark,
                                       I* list, int64_t cnt) {
  const typename Quad<V>::R xv = Quad<V>::broadcast(xj);
  for (; q + 4 <= e; ) {
    const I first = crd[q];
    if (crd[q + 3] - first == 3) {
      add_four<S, Dense, I, V>(first, QuadOps<S, V>::mul(Quad<V>::load(val + q), xv), acc, mark, list, cnt);
      q += 4;
    } else {
      add_one<S, Dense>(first, S::mul(val[q], xj), acc, mark, list, cnt);
      ++q;
    }
  }
  for (; q < e; ++q) add_one<S, Dense>(crd[q], S::mul(val[q], xj), acc, mark, list, cnt);
  return cnt;
}

}  // namespace sj::push_runs

#endif
