// Intersection of two sorted, duplicate-free int32 segments sixteen coordinates at a time
// (AVX-512F), emitting each shared coordinate with the product of its two values, in
// increasing order: the block scheme of the LLVM loop nests' SIMD lane (jit/llvm_backend.cpp,
// gen_simd_lane). A block of up to 16 coordinates from each side is loaded (a masked load
// when fewer are left; missing lanes read -1 on a's side and -2 on b's, which match nothing),
// every pair is compared (a's block against each of b's coordinates, broadcast), the
// matches are emitted in a's lane order, and each block whose last coordinate is not beyond
// the other's is advanced. A partial block needs no scalar epilogue, and the loop has no
// branch on the coordinates' interleaving.
//
// Why: the element-wise product's scalar merge (ewise_kernels.hpp) takes a dependent,
// branch-free step per coordinate. On two 200k x 200k uniform matrices with 16 per row the
// index-notation Z(i,j) = A(i,j) * B(i,j), which runs this scheme, took 4-8 ms against 20 ms
// for sj_plan_execute of the element-wise product.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "jit/isa.hpp"

namespace sj::intersect_avx512 {

// Whether the block intersection runs: the AVX-512 tier (jit/isa.hpp: the CPU, capped by
// SPARSEJIT_ISA).
inline bool available() {
  static const bool yes = jit::default_isa_includes(SJ_ISA_AVX512);
  return yes;
}
// Whether a block's pairs are compared by one VP2INTERSECT (the CPU has it) instead of one
// broadcast compare per coordinate of b.
inline bool has_vp2intersect() {
  static const bool yes = available() && jit::host_features().vp2intersect;
  return yes;
}

// The shared coordinates of a[0, la) and b[0, lb) to oc, S::mul(a's value, b's value) to ov;
// returns how many. A block's pairs are compared by broadcasts (one compare per coordinate of
// b's block), or with kVp2 by VP2INTERSECT: one instruction compares every pair and gives both
// sides' matched lanes, and since both blocks are sorted and duplicate-free the k-th matched
// lane of a's block pairs with the k-th of b's. The LLVM loop nests use the same instruction;
// with it, a plan of the element-wise product of two 600k x 600k uniform matrices (16 a row)
// went from 11.3-11.5 to 10.4-10.9 ms at one thread (the nest: 7.1-7.4 ms). (Compiled for both
// features; the broadcast form uses only AVX-512F instructions.)
//
// block_walk is the body, for row loops compiled for the same target (ewise::mult_rows):
// block_mult_inline writes the matches, block_count only counts them. block_mult is the
// writing walk as a function, for everything else.
template <bool kVp2, bool kWrite, class S, class V>
[[gnu::target("avx512f,avx512vp2intersect"), gnu::always_inline]] inline int64_t block_walk(
    const int32_t* ac, const V* av, int64_t la, const int32_t* bc, const V* bv, int64_t lb, int32_t* oc, V* ov) {
  const __m512i pad_a = _mm512_set1_epi32(-1), pad_b = _mm512_set1_epi32(-2);
  int64_t pa = 0, pb = 0, q = 0;
  while (pa < la && pb < lb) {
    const int64_t na = la - pa < 16 ? la - pa : 16, nb = lb - pb < 16 ? lb - pb : 16;
    const __mmask16 ma = static_cast<__mmask16>((uint32_t{1} << na) - 1);
    const __mmask16 mb = static_cast<__mmask16>((uint32_t{1} << nb) - 1);
    const __m512i va = _mm512_mask_loadu_epi32(pad_a, ma, ac + pa);
    const __m512i vb = _mm512_mask_loadu_epi32(pad_b, mb, bc + pb);
    if constexpr (kVp2) {
      __mmask16 hit_a, hit_b;
      _mm512_2intersect_epi32(va, vb, &hit_a, &hit_b);
      if constexpr (kWrite) {
        for (uint32_t ha = hit_a, hb = hit_b; ha; ha &= ha - 1, hb &= hb - 1) {
          const int a_lane = __builtin_ctz(ha), b_lane = __builtin_ctz(hb);
          oc[q] = ac[pa + a_lane];
          ov[q] = S::mul(av[pa + a_lane], bv[pb + b_lane]);
          ++q;
        }
      } else {
        q += __builtin_popcount(hit_a);
      }
    } else {
      __mmask16 hit = 0;
      for (int64_t j = 0; j < nb; ++j)
        hit = static_cast<__mmask16>(hit | _mm512_cmpeq_epi32_mask(va, _mm512_set1_epi32(bc[pb + j])));
      if constexpr (kWrite) {
        for (uint32_t h = hit; h; h &= h - 1) {
          const int a_lane = __builtin_ctz(h);
          const int32_t c = ac[pa + a_lane];
          const int b_lane = __builtin_ctz(_mm512_mask_cmpeq_epi32_mask(mb, vb, _mm512_set1_epi32(c)));
          oc[q] = c;
          ov[q] = S::mul(av[pa + a_lane], bv[pb + b_lane]);
          ++q;
        }
      } else {
        q += __builtin_popcount(hit);
      }
    }
    // Advanced without a branch: which block ends first varies from block to block on rows of
    // random coordinates.
    const int32_t last_a = ac[pa + na - 1], last_b = bc[pb + nb - 1];
    pa += na & -static_cast<int64_t>(last_a <= last_b);
    pb += nb & -static_cast<int64_t>(last_b <= last_a);
  }
  return q;
}
template <bool kVp2, class S, class V>
[[gnu::target("avx512f,avx512vp2intersect"), gnu::always_inline]] inline int64_t block_mult_inline(
    const int32_t* ac, const V* av, int64_t la, const int32_t* bc, const V* bv, int64_t lb, int32_t* oc, V* ov) {
  return block_walk<kVp2, true, S>(ac, av, la, bc, bv, lb, oc, ov);
}
template <bool kVp2, class S, class V>
[[gnu::target("avx512f,avx512vp2intersect")]] int64_t block_mult(const int32_t* ac, const V* av, int64_t la,
                                                                const int32_t* bc, const V* bv, int64_t lb,
                                                                int32_t* oc, V* ov) {
  return block_walk<kVp2, true, S>(ac, av, la, bc, bv, lb, oc, ov);
}

// How many coordinates a[0, la) and b[0, lb) share, by the same blocks (nothing written).
struct NoValues {};
template <bool kVp2>
[[gnu::target("avx512f,avx512vp2intersect")]] int64_t block_count(const int32_t* ac, int64_t la, const int32_t* bc,
                                                                 int64_t lb) {
  return block_walk<kVp2, false, NoValues, double>(ac, nullptr, la, bc, nullptr, lb, nullptr, nullptr);
}

template <class S, class V>
int64_t mult(const int32_t* ac, const V* av, int64_t la, const int32_t* bc, const V* bv, int64_t lb, int32_t* oc,
             V* ov) {
  return block_mult<false, S>(ac, av, la, bc, bv, lb, oc, ov);
}
template <class S, class V>
int64_t mult_vp2(const int32_t* ac, const V* av, int64_t la, const int32_t* bc, const V* bv, int64_t lb, int32_t* oc,
                 V* ov) {
  return block_mult<true, S>(ac, av, la, bc, bv, lb, oc, ov);
}

// mult_vp2 where the CPU has VP2INTERSECT, else mult.
template <class S, class V>
inline int64_t mult_best(const int32_t* ac, const V* av, int64_t la, const int32_t* bc, const V* bv, int64_t lb,
                         int32_t* oc, V* ov) {
  return has_vp2intersect() ? mult_vp2<S>(ac, av, la, bc, bv, lb, oc, ov) : mult<S>(ac, av, la, bc, bv, lb, oc, ov);
}

}  // namespace sj::intersect_avx512
