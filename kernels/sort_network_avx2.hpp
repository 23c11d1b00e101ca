// Sorting up to 256 int32 keys with bitonic sorting networks in AVX2 registers: a fixed
// sequence of min/max/shuffle/blend with no branch on the data. A SpGEMM row's column list
// (5-256 distinct columns, in the order the products first touched them) is sorted this way,
// where a rank sort takes ~100-700 instructions for up to 32 keys and a comparison sort
// mispredicts about once per key (std::sort of 100 random keys: ~8x the time of the network).
//
// Two widths of lane: keys as they are, eight 32-bit lanes per register (~40 instructions for
// 8 keys, ~100 for 16, ~290 for 32, ~760 for 64, ~1900 for 128, ~4800 for 256); or, when every
// key lies within 65,534 of the least, their offsets from it in sixteen 16-bit lanes: half the
// registers, but more stages per register and a pack and unpack, so ~65 for 16 keys, ~200 for
// 32, ~550 for 64, ~1300 for 128, ~3150 for 256, and 16-40% less time (4096 lists of random
// keys, this file's callers' lengths). Most rows of a product span far fewer columns than that.
//
// Only for code compiled for AVX2 (the functions carry the target attribute; callers must
// check the CPU). Keys are signed 32-bit; a short list is padded with the lane's largest value
// (INT32_MAX, or 0xFFFF for an offset), which sorts last, so the first n keys out are the n
// keys in.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <cstdint>
#include <limits>

#include "jit/isa.hpp"

#define SJ_SORT_NETWORK_AVAILABLE 1

namespace sj::sort_network {

#define SJ_NET_FN [[gnu::target("avx2"), gnu::always_inline]] inline

// Whether lane i keeps the larger key in the compare-exchange at distance j of a bitonic stage
// that builds sorted blocks of k, in a register of `lanes` lanes: lane i pairs with i^j; the
// lower lane of an ascending block keeps the min, of a descending block (i & k set) the max.
// k = lanes means one ascending block.
constexpr bool keeps_max(int lanes, int k, int j, int i) { return ((i & j) != 0) != ((i & k) != 0 && k < lanes); }

// keeps_max of lanes 0-7 as the bits of a blend immediate.
constexpr int keeps_max_bits(int lanes, int k, int j) {
  int bits = 0;
  for (int i = 0; i < 8; ++i) bits |= keeps_max(lanes, k, j, i) << i;
  return bits;
}

// Eight signed 32-bit keys per register.
struct Lanes32 {
  static constexpr int kLanes = 8;
  SJ_NET_FN static __m256i min(__m256i a, __m256i b) { return _mm256_min_epi32(a, b); }
  SJ_NET_FN static __m256i max(__m256i a, __m256i b) { return _mm256_max_epi32(a, b); }
  template <int J> SJ_NET_FN static __m256i partner(__m256i v) {
    if constexpr (J == 1) return _mm256_shuffle_epi32(v, 0xB1);      // swap neighbours
    else if constexpr (J == 2) return _mm256_shuffle_epi32(v, 0x4E);  // swap pairs
    else return _mm256_permute2x128_si256(v, v, 0x01);               // swap halves
  }
  // The lanes keeps_max picks from `hi`, the others from `lo`.
  template <int K, int J> SJ_NET_FN static __m256i blend(__m256i lo, __m256i hi) {
    return _mm256_blend_epi32(lo, hi, keeps_max_bits(8, K, J));
  }
  SJ_NET_FN static __m256i reverse(__m256i v) {
    return _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0));
  }
};

// Sixteen unsigned 16-bit offsets per register.
struct Lanes16 {
  static constexpr int kLanes = 16;
  SJ_NET_FN static __m256i min(__m256i a, __m256i b) { return _mm256_min_epu16(a, b); }
  SJ_NET_FN static __m256i max(__m256i a, __m256i b) { return _mm256_max_epu16(a, b); }
  template <int J> SJ_NET_FN static __m256i partner(__m256i v) {
    if constexpr (J == 1) {  // swap neighbouring 16-bit lanes
      const __m256i swap = _mm256_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13, 2, 3, 0, 1, 6, 7, 4,
                                            5, 10, 11, 8, 9, 14, 15, 12, 13);
      return _mm256_shuffle_epi8(v, swap);
    } else if constexpr (J == 2) {
      return _mm256_shuffle_epi32(v, 0xB1);
    } else if constexpr (J == 4) {
      return _mm256_shuffle_epi32(v, 0x4E);
    } else {
      return _mm256_permute2x128_si256(v, v, 0x01);
    }
  }
  template <int K, int J> SJ_NET_FN static __m256i blend(__m256i lo, __m256i hi) {
    // One immediate blend where both 128-bit halves take the same lanes, else a byte mask.
    constexpr bool same_halves = [] {
      for (int i = 0; i < 8; ++i)
        if (keeps_max(16, K, J, i) != keeps_max(16, K, J, i + 8)) return false;
      return true;
    }();
    if constexpr (same_halves) {
      return _mm256_blend_epi16(lo, hi, keeps_max_bits(16, K, J));
    } else {
      const __m256i mask = _mm256_setr_epi16(
          keeps_max(16, K, J, 0) ? -1 : 0, keeps_max(16, K, J, 1) ? -1 : 0, keeps_max(16, K, J, 2) ? -1 : 0,
          keeps_max(16, K, J, 3) ? -1 : 0, keeps_max(16, K, J, 4) ? -1 : 0, keeps_max(16, K, J, 5) ? -1 : 0,
          keeps_max(16, K, J, 6) ? -1 : 0, keeps_max(16, K, J, 7) ? -1 : 0, keeps_max(16, K, J, 8) ? -1 : 0,
          keeps_max(16, K, J, 9) ? -1 : 0, keeps_max(16, K, J, 10) ? -1 : 0, keeps_max(16, K, J, 11) ? -1 : 0,
          keeps_max(16, K, J, 12) ? -1 : 0, keeps_max(16, K, J, 13) ? -1 : 0, keeps_max(16, K, J, 14) ? -1 : 0,
          keeps_max(16, K, J, 15) ? -1 : 0);
      return _mm256_blendv_epi8(lo, hi, mask);
    }
  }
  SJ_NET_FN static __m256i reverse(__m256i v) {
    const __m256i rev = _mm256_setr_epi8(14, 15, 12, 13, 10, 11, 8, 9, 6, 7, 4, 5, 2, 3, 0, 1, 14, 15, 12, 13, 10, 11,
                                         8, 9, 6, 7, 4, 5, 2, 3, 0, 1);
    const __m256i within = _mm256_shuffle_epi8(v, rev);  // each half reversed, then the halves swapped
    return _mm256_permute2x128_si256(within, within, 0x01);
  }
};

template <class L, int K, int J> SJ_NET_FN __m256i exchange(__m256i v) {
  const __m256i p = L::template partner<J>(v);
  return L::template blend<K, J>(L::min(v, p), L::max(v, p));
}

// A bitonic register made ascending: compare-exchanges at distances lanes/2 ... 1.
template <class L, int J = L::kLanes / 2> SJ_NET_FN __m256i clean(__m256i v) {
  v = exchange<L, L::kLanes, J>(v);
  if constexpr (J > 1) return clean<L, J / 2>(v);
  return v;
}

// One register sorted: blocks of 2, 4, ... built by bitonic stages of distances K/2 ... 1.
template <class L, int K = 2, int J = K / 2> SJ_NET_FN __m256i sort_register(__m256i v) {
  if constexpr (K == L::kLanes) {
    return clean<L>(v);
  } else {
    v = exchange<L, K, J>(v);
    if constexpr (J > 1) return sort_register<L, K, J / 2>(v);
    else return sort_register<L, 2 * K, K>(v);
  }
}

// R registers (R lanes-wide blocks of keys) that form a bitonic sequence made ascending:
// compare-exchanges across registers at distances R/2 ... 1, then within each register.
template <class L, int R> SJ_NET_FN void clean_registers(__m256i* v) {
  if constexpr (R == 1) {
    v[0] = clean<L>(v[0]);
  } else {
    for (int i = 0; i < R / 2; ++i) {
      const __m256i lo = L::min(v[i], v[i + R / 2]), hi = L::max(v[i], v[i + R / 2]);
      v[i] = lo;
      v[i + R / 2] = hi;
    }
    clean_registers<L, R / 2>(v);
    clean_registers<L, R / 2>(v + R / 2);
  }
}

template <class L, int R> [[gnu::target("avx2"), gnu::noinline]] void sort_registers_outlined(__m256i* v);

// Sorts the keys of v[0..R) ascending: each half sorted, the second reversed (so the whole is
// bitonic), then cleaned. Halves of 8 registers and more are sorted by a call, so that the
// larger networks reuse one copy of the 8-register code.
template <class L, int R> SJ_NET_FN void sort_registers(__m256i* v) {
  if constexpr (R == 1) {
    v[0] = sort_register<L>(v[0]);
  } else {
    if constexpr (R / 2 >= 8) {
      sort_registers_outlined<L, R / 2>(v);
      sort_registers_outlined<L, R / 2>(v + R / 2);
    } else {
      sort_registers<L, R / 2>(v);
      sort_registers<L, R / 2>(v + R / 2);
    }
    __m256i rev[R / 2];  // the second half reversed: registers and lanes
    for (int i = 0; i < R / 2; ++i) rev[i] = L::reverse(v[R - 1 - i]);
    for (int i = 0; i < R / 2; ++i) v[R / 2 + i] = rev[i];
    clean_registers<L, R>(v);
  }
}

template <class L, int R> [[gnu::target("avx2"), gnu::noinline]] void sort_registers_outlined(__m256i* v) {
  sort_registers<L, R>(v);
}

constexpr int64_t kMaxKeys = 256;
// Offsets in 16-bit lanes: every key within this of the least (0xFFFF pads).
constexpr int64_t kMaxOffsetSpan = 0xFFFE;

// Whether n keys spanning [lo, hi] are sorted as 16-bit offsets: past one register's worth of
// 32-bit keys (below it the pack costs more than it saves) and within the offsets' span.
constexpr bool uses_offsets(int64_t n, int64_t lo, int64_t hi) {
  return n > 8 && hi >= lo && static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) <= uint64_t(kMaxOffsetSpan);
}

// Instructions to sort n keys, their loads and stores included (callgrind), 0 < n <= kMaxKeys:
// in 32-bit lanes, and in 16-bit lanes (measured the same way; two 8-key halves are loaded,
// offset and packed per register, and unpacked on the way out).
constexpr int64_t instructions(int64_t n) {
  if (n <= 8) return 40;
  if (n <= 16) return 100;
  if (n <= 32) return 290;
  if (n <= 64) return 760;
  if (n <= 128) return 1900;
  return 4800;
}
constexpr int64_t instructions16(int64_t n) {
  if (n <= 16) return 65;
  if (n <= 32) return 200;
  if (n <= 64) return 550;
  if (n <= 128) return 1300;
  return 3150;
}

// Whether the networks run: the AVX2 tier (jit/isa.hpp: the CPU, capped by SPARSEJIT_ISA).
inline bool available() {
  static const bool yes = jit::default_isa_includes(SJ_ISA_AVX2);
  return yes;
}

// For keys of type I spanning [lo, hi]: the instructions to sort n of them, or 0 where no
// network applies (keys wider than 32 bits, or more than kMaxKeys).
template <class I> constexpr int64_t cost([[maybe_unused]] int64_t n, [[maybe_unused]] int64_t lo = 0,
                                          [[maybe_unused]] int64_t hi = std::numeric_limits<int64_t>::max()) {
  if constexpr (sizeof(I) == 4) {
    if (n <= kMaxKeys) return uses_offsets(n, lo, hi) ? instructions16(n) : instructions(n);
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
  sort_registers<Lanes32, R>(v);
  for (int i = 0; i < R; ++i) _mm256_maskstore_epi32(a + 8 * i, in[i], v[i]);
}

// The same in 16-bit lanes, keys a[16i .. n) in register i as offsets from lo: each 8-key half
// is loaded, offset (lanes past n: 0xFFFF) and the two packed into one register (in an order
// the sort does not care about); the sorted offsets are widened back and lo added.
template <int R> SJ_NET_FN void sort_block16(int32_t* a, int64_t n, int32_t lo) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), top = _mm256_set1_epi32(0xFFFF),
                base = _mm256_set1_epi32(lo);
  __m256i v[R], in[2 * R];
  for (int i = 0; i < 2 * R; ++i)
    in[i] = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(n - 8 * i)), lane);
  for (int i = 0; i < R; ++i) {
    const __m256i h0 = _mm256_blendv_epi8(top, _mm256_sub_epi32(_mm256_maskload_epi32(a + 16 * i, in[2 * i]), base),
                                          in[2 * i]);
    const __m256i h1 = _mm256_blendv_epi8(
        top, _mm256_sub_epi32(_mm256_maskload_epi32(a + 16 * i + 8, in[2 * i + 1]), base), in[2 * i + 1]);
    v[i] = _mm256_packus_epi32(h0, h1);
  }
  sort_registers<Lanes16, R>(v);
  for (int i = 0; i < R; ++i) {
    const __m256i k0 = _mm256_add_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(v[i])), base);
    const __m256i k1 = _mm256_add_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(v[i], 1)), base);
    _mm256_maskstore_epi32(a + 16 * i, in[2 * i], k0);
    _mm256_maskstore_epi32(a + 16 * i + 8, in[2 * i + 1], k1);
  }
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

// Sorts a[0..n) ascending, 0 <= n <= kMaxKeys, every key in [lo, lo + kMaxOffsetSpan].
[[gnu::target("avx2")]] inline void sort_keys16(int32_t* a, int64_t n, int32_t lo) {
  if (n <= 16) sort_block16<1>(a, n, lo);
  else if (n <= 32) sort_block16<2>(a, n, lo);
  else if (n <= 64) sort_block16<4>(a, n, lo);
  else if (n <= 128) sort_block16<8>(a, n, lo);
  else sort_block16<16>(a, n, lo);
}

// Sorts a[0..n) of keys of type I spanning [lo, hi] where cost<I>(n, lo, hi) != 0.
template <class I>
[[gnu::target("avx2")]] inline void sort([[maybe_unused]] I* a, [[maybe_unused]] int64_t n, [[maybe_unused]] int64_t lo = 0,
                                         [[maybe_unused]] int64_t hi = std::numeric_limits<int64_t>::max()) {
  if constexpr (sizeof(I) == 4) {
    if (uses_offsets(n, lo, hi)) sort_keys16(reinterpret_cast<int32_t*>(a), n, static_cast<int32_t>(lo));
    else sort_keys(reinterpret_cast<int32_t*>(a), n);
  }
}

#undef SJ_NET_FN

}  // namespace sj::sort_network

#endif
