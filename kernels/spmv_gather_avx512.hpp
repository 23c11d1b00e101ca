// Row-wise SpMV (y = A*x, x dense) whose x values are fetched eight at a time by an AVX-512
// gather, for an x too large for L2. Each row still starts from its first product and adds
// the others one at a time in increasing column order, so y is bit-identical to the scalar
// loop (kernels/spmspv_kernels.hpp, spmv_rows) and to the reference: only the loads and the
// products are vector operations, and a product is the same in a lane as alone.
//
// Why: once x spills out of L2 the scalar loop waits on its loads of x; eight loads issued by
// one instruction keep more of them in flight. sj_spmv, the two loops alternated in one
// process, uniform n x n with 16 entries a row, one thread, this VM (AMD EPYC, 1 MiB L2,
// 32 MiB L3): n = 600k (x 4.8 MB) 19.0 -> 13.2 ms, 1M (8 MB) 29.6 -> 22.3 ms, 40 a row
// 67.1 -> 45.4 ms, 4 a row equal; 1.4M (11 MB) 45.2 -> 39.0 ms; 2M (16 MB) 81.3 -> 82.2 ms; 3M
// (24 MB) 143 -> 235 ms. Two threads: 600k 9.3 -> 7.3 ms, 1M 16.4 -> 13.2 ms, 2M 44.1 -> 54.6
// ms. Once x no longer stays in L3 beside A's stream, a gather waits for its slowest load and
// loses; below L2 (a stand-alone copy: 100k columns equal, 60k 1.2x slower) it only costs. So
// the loop runs for an x between L2 and a quarter of L3. A row of fewer than nine entries never
// reaches a gather. Summing the eight products in a tree (not bit-identical) was tried only for
// comparison: 1.06x faster at 16 a row, 1.4x at 64, where the in-order sum's latency bounds the
// loop.
//
// Floating point contraction: a multiply fused with the following add would change bits. The
// library is built with -ffp-contract=off (CMakeLists.txt), which this AVX-512 code (FMA
// available) relies on.
#pragma once
#include <immintrin.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "src/semiring.hpp"

namespace sj::spmv_gather_avx512 {

// Whether this CPU runs the gather loop (checked once).
inline bool available() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}

// Bytes of one core's L2 cache and of the L3; 1 MiB and 32 MiB where the system does not say.
inline int64_t l2_bytes() {
  static const int64_t bytes = [] {
    const long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return v > 0 ? int64_t{v} : int64_t{1} << 20;
  }();
  return bytes;
}
inline int64_t l3_bytes() {
  static const int64_t bytes = [] {
    const long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
    return v > 0 ? int64_t{v} : int64_t{32} << 20;
  }();
  return bytes;
}

// When the gather loop runs: by x's size (the default), always or never (tests pin one loop,
// process-wide, to cover both on any input).
enum class Use { Auto, Always, Never };
inline std::atomic<Use> g_use{Use::Auto};
inline void set_use(Use u) { g_use.store(u, std::memory_order_relaxed); }

// The semirings whose product of eight values is one AVX-512 operation (double values only).
template <class S> struct VectorProduct : std::false_type {};
template <> struct VectorProduct<PlusTimes<double>> : std::true_type {
  [[gnu::target("avx512f"), gnu::always_inline]] static __m512d of(__m512d a, __m512d b) { return _mm512_mul_pd(a, b); }
};
template <> struct VectorProduct<MaxTimes<double>> : std::true_type {
  [[gnu::target("avx512f"), gnu::always_inline]] static __m512d of(__m512d a, __m512d b) { return _mm512_mul_pd(a, b); }
};
template <> struct VectorProduct<MinPlus<double>> : std::true_type {
  [[gnu::target("avx512f"), gnu::always_inline]] static __m512d of(__m512d a, __m512d b) { return _mm512_add_pd(a, b); }
};

template <class S, class I, class V>
inline constexpr bool supports = VectorProduct<S>::value && std::is_same_v<V, double> &&
                                 (std::is_same_v<I, int32_t> || std::is_same_v<I, int64_t>);

// Whether an SpMV over `cols` columns of x takes the gather loop: by default for an x larger
// than L2 and at most a quarter of L3 (see above).
template <class S, class I, class V> bool chosen(int64_t cols) {
  if constexpr (!supports<S, I, V>) {
    return false;
  } else {
    const Use u = g_use.load(std::memory_order_relaxed);
    if (u == Use::Never || !available()) return false;
    const int64_t x_bytes = cols * static_cast<int64_t>(sizeof(double));
    return u == Use::Always || (x_bytes > l2_bytes() && x_bytes <= l3_bytes() / 4);
  }
}

// x at eight coordinates. The masked form with a zero source: GCC 12's unmasked gather passes
// an undefined register as its source and warns (-Wmaybe-uninitialized) where it is inlined.
template <class I> [[gnu::target("avx512f"), gnu::always_inline]] inline __m512d gather8(const I* crd, const double* x) {
  if constexpr (sizeof(I) == 4)
    return _mm512_mask_i32gather_pd(_mm512_setzero_pd(), 0xFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(crd)),
                                    x, 8);
  else
    return _mm512_mask_i64gather_pd(_mm512_setzero_pd(), 0xFF, _mm512_loadu_si512(crd), x, 8);
}

// y(i) for rows [r0, r1): the first product alone, then blocks of eight products (gathered,
// multiplied in one operation, added in order), then the rest one at a time; zero() for an
// empty row.
template <class S, class I>
[[gnu::target("avx512f")]] void rows(const int64_t* pos, const I* crd, const double* val, const double* __restrict x,
                                     double* __restrict y, int64_t r0, int64_t r1) {
  alignas(64) double prod[8];
  for (int64_t i = r0; i < r1; ++i) {
    const int64_t b = pos[i], e = pos[i + 1];
    if (b == e) {
      y[i] = S::zero();
      continue;
    }
    double acc = S::mul(val[b], x[crd[b]]);
    int64_t p = b + 1;
    for (; p + 8 <= e; p += 8) {
      _mm512_store_pd(prod, VectorProduct<S>::of(_mm512_loadu_pd(val + p), gather8(crd + p, x)));
      for (int k = 0; k < 8; ++k) acc = S::add(acc, prod[k]);
    }
    for (; p < e; ++p) acc = S::add(acc, S::mul(val[p], x[crd[p]]));
    y[i] = acc;
  }
}

}  // namespace sj::spmv_gather_avx512
