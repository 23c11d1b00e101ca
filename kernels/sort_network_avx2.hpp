// Sorting up to 256 int32 keys with bitonic sorting networks in AVX2 registers (eight keys per
// register): a fixed sequence of min/max/shuffle/blend with no branch on the data. A SpGEMM
// row's column list (5-256 distinct columns, in the order the products first touched them) is
// sorted this way in ~40 (8 keys), ~100 (16), ~290 (32), ~760 (64), ~1900 (128) or ~4800
// (256) instructions, where a rank sort takes ~100-700 for up to 32 keys and a comparison sort
// mispredicts about once per key (std::sort of 100 random keys: ~8x the time of the network).
//
// Only for code compiled for AVX2 (the functions carry the target attribute; callers must
// check the CPU). Keys are signed 32-bit; a short list is padded with INT32_MAX, which sorts
// last, so the first n keys out are the n keys in.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <cstdint>
#include <limits>

#define SJ_SORT_NETWORK_AVAILABLE 1

namespace sj::sort_network {

#define SJ_NET_FN [[gnu::target("avx2"), gnu::always_inline]] inline

// The lanes that keep the larger key in the compare-exchange at distance j of a bitonic stage
// that builds sorted blocks of k: lane i pairs with i^j; the lower lane of an ascending block
// keeps the min, of a descending block (i & k set) the max. k = 8 means one ascending block.
constexpr int max_lanes(int k, int j) {
  int m = 0;
  for (int i = 0; i < 8; ++i)
    if (((i & j) != 0) != ((i & k) != 0 && k < 8)) m |= 1 << i;
  return m;
}

template <int J> SJ_NET_FN __m256i partner(__m256i v) {
  if constexpr (J == 1) return _mm256_shuffle_epi32(v, 0xB1);      // swap neighbours
  else if constexpr (J == 2) return _mm256_shuffle_epi32(v, 0x4E);  // swap pairs
  else return _mm256_permute2x128_si256(v, v, 0x01);               // swap halves
}

template <int K, int J> SJ_NET_FN __m256i exchange(__m256i v) {
  const __m256i p = partner<J>(v);
  return _mm256_blend_epi32(_mm256_min_epi32(v, p), _mm256_max_epi32(v, p), max_lanes(K, J));
}

// A bitonic register made ascending.
SJ_NET_FN __m256i clean(__m256i v) { return exchange<8, 1>(exchange<8, 2>(exchange<8, 4>(v))); }

SJ_NET_FN __m256i sort8(__m256i v) {
  v = exchange<2, 1>(v);
  v = exchange<4, 1>(exchange<4, 2>(v));
  return clean(v);
}

SJ_NET_FN __m256i reverse(__m256i v) { return _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0)); }

// R registers (8R keys) that form a bitonic sequence made ascending: compare-exchanges across
// registers at distances R/2 ... 1, then within each register.
template <int R> SJ_NET_FN void clean_registers(__m256i* v) {
  if constexpr (R == 1) {
    v[0] = clean(v[0]);
  } else {
    for (int i = 0; i < R / 2; ++i) {
      const __m256i lo = _mm256_min_epi32(v[i], v[i + R / 2]), hi = _mm256_max_epi32(v[i], v[i + R / 2]);
      v[i] = lo;
      v[i + R / 2] = hi;
    }
    clean_registers<R / 2>(v);
    clean_registers<R / 2>(v + R / 2);
  }
}

template <int R> [[gnu::target("avx2"), gnu::noinline]] void sort_registers_outlined(__m256i* v);

// Sorts the 8R keys of v[0..R) ascending: each half sorted, the second reversed (so the whole
// is bitonic), then cleaned. Halves of 64 keys and more are sorted by a call, so that the
// 128- and 256-key networks reuse one copy of the 64-key code.
template <int R> SJ_NET_FN void sort_registers(__m256i* v) {
  if constexpr (R == 1) {
    v[0] = sort8(v[0]);
  } else {
    if constexpr (R / 2 >= 8) {
      sort_registers_outlined<R / 2>(v);
      sort_registers_outlined<R / 2>(v + R / 2);
    } else {
      sort_registers<R / 2>(v);
      sort_registers<R / 2>(v + R / 2);
    }
    __m256i rev[R / 2];  // the second half reversed: registers and lanes
    for (int i = 0; i < R / 2; ++i) rev[i] = reverse(v[R - 1 - i]);
    for (int i = 0; i < R / 2; ++i) v[R / 2 + i] = rev[i];
    clean_registers<R>(v);
  }
}

template <int R> [[gnu::target("avx2"), gnu::noinline]] void sort_registers_outlined(__m256i* v) { sort_registers<R>(v); }

constexpr int64_t kMaxKeys = 256;

// Instructions to sort n keys, their loads and stores included (callgrind), 0 < n <= kMaxKeys.
constexpr int64_t instructions(int64_t n) {
  if (n <= 8) return 40;
  if (n <= 16) return 100;
  if (n <= 32) return 290;
  if (n <= 64) return 760;
  if (n <= 128) return 1900;
  return 4800;
}

// Whether this CPU runs the networks (checked once).
inline bool available() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}

// For keys of type I: the instructions to sort n of them, or 0 where no network applies
// (keys wider than 32 bits, or more than kMaxKeys).
template <class I> constexpr int64_t cost([[maybe_unused]] int64_t n) {
  if constexpr (sizeof(I) == 4) {
    if (n <= kMaxKeys) return instructions(n);
  }
  return 0;
}

// Keys a[8i .. n) of register i (none past n are read or written): the lanes at or past n
// load as INT32_MAX.
template <int R> SJ_NET_FN void sort_block(int32_t* a, int64_t n) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), top = _mm256_set1_epi32(std::numeric_limits<int32_t>::max());
  __m256i v[R], in[R];
  for (int i = 0; i < R; ++i) {
    in[i] = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(n - 8 * i)), lane);
    v[i] = _mm256_blendv_epi8(top, _mm256_maskload_epi32(a + 8 * i, in[i]), in[i]);
  }
  sort_registers<R>(v);
  for (int i = 0; i < R; ++i) _mm256_maskstore_epi32(a + 8 * i, in[i], v[i]);
}

// Sorts a[0..n) ascending, 0 <= n <= kMaxKeys.
[[gnu::target("avx2")]] inline void sort_keys(int32_t* a, int64_t n) {
  if (n <= 8) sort_block<1>(a, n);
  else if (n <= 16) sort_block<2>(a, n);
  else if (n <= 32) sort_block<4>(a, n);
  else if (n <= 64) sort_block<8>(a, n);
  else if (n <= 128) sort_block<16>(a, n);
  else sort_block<32>(a, n);
}

// Sorts a[0..n) of keys of type I where cost<I>(n) != 0.
template <class I> [[gnu::target("avx2")]] inline void sort([[maybe_unused]] I* a, [[maybe_unused]] int64_t n) {
  if constexpr (sizeof(I) == 4) sort_keys(reinterpret_cast<int32_t*>(a), n);
}

#undef SJ_NET_FN

}  // namespace sj::sort_network

#endif
