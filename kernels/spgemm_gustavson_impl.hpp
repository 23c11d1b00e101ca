// The kernels of spgemm_gustavson.cpp, included there twice: once for any x86-64 and once
// compiled for CPUs with POPCNT/BMI1/BMI2 (the bitmap decode of sorted rows needs popcount
// and tzcnt; without them GCC calls libgcc). Not a standalone header: it is included inside
// a namespace after the standard headers it uses.
// clang-format off

// ------------------------------------------------------------------------------------------
// Workspaces, kept per thread and reused across rows and calls (grow only), so a call makes
// no allocation besides its result. A slot keeps the accumulated value beside the stamp of
// the row that last touched it: one cache line per random access, and no clearing between
// rows (a stamp from an earlier row is always smaller than the current one).

template <class V> struct DenseScratch {
  std::vector<uint32_t> marks;  // marks[j]: stamp of the row that last touched column j
  std::vector<V> vals;          // vals[j]: its accumulated value
  uint32_t stamp = 0;
  // sums[j]: the accumulator of a row dense in its span (DenseAcc::span_row), which puts each
  // slot it used back to the semiring's identity, so no row clears it or tests a product.
  std::vector<V> sums;
  bool sums_ready = false;  // every sums[j] holds sums_identity (bitwise)
  V sums_identity{};
  bool dense_span = false;  // the last row filled most of its span: the next tries span_row

  V* sums_at(V identity) {
    if (!sums_ready || sums.size() < marks.size() || std::memcmp(&sums_identity, &identity, sizeof(V)) != 0) {
      sums.assign(marks.size(), identity);
      sums_identity = identity;
      sums_ready = true;
    }
    return sums.data();
  }

  void ensure(int64_t cols) {
    if (static_cast<int64_t>(marks.size()) < cols) {
      marks.resize(static_cast<size_t>(cols), 0);
      vals.resize(static_cast<size_t>(cols));
    }
  }
  // `width` consecutive fresh stamps (the first is returned), all above every stored mark.
  uint32_t next(uint32_t width = 1) {
    if (stamp > std::numeric_limits<uint32_t>::max() - width - 1) {
      std::fill(marks.begin(), marks.end(), 0u);
      stamp = 0;
    }
    const uint32_t s = stamp + 1;
    stamp += width;
    return s;
  }
  // Very large workspaces are not kept after the call.
  void trim() {
    if (marks.size() * (sizeof(V) + 4) + sums.size() * sizeof(V) > (size_t(64) << 20)) {
      std::vector<uint32_t>().swap(marks);
      std::vector<V>().swap(vals);
      std::vector<V>().swap(sums);
      sums_ready = false;
      stamp = 0;
    }
  }
};

template <class V> DenseScratch<V>& dense_scratch() {
  thread_local DenseScratch<V> s;
  return tls_pinned(s);
}

struct MarkScratch {
  std::vector<uint32_t> marks;
  uint32_t stamp = 0;
  uint32_t* ensure(int64_t n) {
    if (static_cast<int64_t>(marks.size()) < n) marks.resize(static_cast<size_t>(n), 0);
    return marks.data();
  }
  uint32_t next() {
    if (stamp == std::numeric_limits<uint32_t>::max() - 1) {
      std::fill(marks.begin(), marks.end(), 0u);
      stamp = 0;
    }
    return ++stamp;
  }
  void trim() {
    if (marks.size() * sizeof(uint32_t) > (size_t(64) << 20)) {
      std::vector<uint32_t>().swap(marks);
      stamp = 0;
    }
  }
};

MarkScratch& mark_scratch() {
  thread_local MarkScratch s;
  return tls_pinned(s);
}

template <class I, class V> struct HashScratch {
  std::vector<I> keys;  // -1 = empty; kept all-empty between rows
  std::vector<V> vals;
  I* ensure(size_t cap) {
    if (keys.size() < cap) {
      keys.assign(cap, I(-1));
      vals.resize(cap);
    }
    return keys.data();
  }
  void trim() {
    if (keys.size() * (sizeof(I) + sizeof(V)) > (size_t(64) << 20)) {
      std::vector<I>().swap(keys);
      std::vector<V>().swap(vals);
    }
  }
};

template <class I, class V> HashScratch<I, V>& hash_scratch() {
  thread_local HashScratch<I, V> s;
  return tls_pinned(s);
}

// ------------------------------------------------------------------------------------------
// Sorting a row's column list.

// Rank sort for short lists of distinct values: each value's final place is the number of
// values below it. n^2 compares, but branch-free and vectorised, which beats the mispredicted
// branches of an insertion sort on short scattered rows.
// The list is copied to a block padded to a multiple of eight with the largest value (never
// below an entry), so the inner loop is whole vectors with no scalar remainder.
constexpr int64_t kRankSortMax = 32;
template <class I> inline void rank_sort(I* __restrict a, int64_t n) {
  I src[kRankSortMax], tmp[kRankSortMax];
  const int64_t n8 = (n + 7) & ~int64_t(7);
  std::memcpy(src, a, sizeof(I) * static_cast<size_t>(n));
  for (int64_t j = n; j < n8; ++j) src[j] = std::numeric_limits<I>::max();
  for (int64_t i = 0; i < n; ++i) {
    const I x = src[i];
    I r = 0;
    for (int64_t b = 0; b < n8; b += 8)
      for (int64_t j = 0; j < 8; ++j) r += src[b + j] < x;
    tmp[r] = x;
  }
  std::memcpy(a, tmp, sizeof(I) * static_cast<size_t>(n));
}

template <class I> inline void insertion_sort(I* a, int64_t n) {
  for (int64_t i = 1; i < n; ++i) {
    const I x = a[i];
    int64_t j = i - 1;
    while (j >= 0 && a[j] > x) {
      a[j + 1] = a[j];
      --j;
    }
    a[j + 1] = x;
  }
}

// A row's column list is put in order by one of: insertion sort (short rows); a bitmap of
// the touched columns, set from the list and then read word by word over [lo, hi] (cost
// ~ 2n + (hi - lo)/64: wins whenever the row is not very sparse within its range); or
// std::sort (~ n log2 n compare-swaps that mispredict). Relative costs measured here.
constexpr int64_t kInsertionMax = 4;
constexpr double kSortPerLevel = 2.5;  // std::sort, per entry and level, in bitmap-word units
constexpr double kBitmapPerEntry = 2.0;

inline bool bitmap_is_cheaper(int64_t n, int64_t lo, int64_t hi) {
  const double lg = static_cast<double>(std::bit_width(static_cast<uint64_t>(n)));
  const double words = static_cast<double>((hi >> 6) - (lo >> 6) + 1);
  return kBitmapPerEntry * static_cast<double>(n) + words <= kSortPerLevel * static_cast<double>(n) * lg;
}

// Rank sort against the bitmap, in instructions: per entry one vector compare-and-count per
// eight entries plus its reduction; per entry setting its bit, per word its decode.
inline bool rank_is_cheaper(int64_t n, int64_t words) {
  return n * (3 * ((n + 7) >> 3) + 10) <= 3 * n + 37 * words;
}

// The AVX2 sorting networks (kernels/sort_network_avx2.hpp) for 32-bit columns within
// [lo, hi]: instructions for 8 ... 256 keys (16-bit lanes where the span allows); 0 where
// unavailable. (This translation unit's AVX2 copy runs only on AVX2 CPUs, so no runtime check
// here.)
template <class I>
constexpr int64_t network_sort_cost([[maybe_unused]] int64_t n, [[maybe_unused]] I lo, [[maybe_unused]] I hi) {
#if SJ_SPGEMM_AVX2 && defined(SJ_SORT_NETWORK_AVAILABLE)
  return sort_network::cost<I>(n, lo, hi);
#else
  return 0;
#endif
}

// Sorts oc[0..n) (within [lo, hi]) by the network; only where network_sort_cost != 0.
template <class I>
inline void network_sort([[maybe_unused]] I* oc, [[maybe_unused]] int64_t n, [[maybe_unused]] I lo,
                         [[maybe_unused]] I hi) {
#if SJ_SPGEMM_AVX2 && defined(SJ_SORT_NETWORK_AVAILABLE)
  sort_network::sort(oc, n, lo, hi);
#endif
}

// A bitmap of `cols` bits, all clear between uses.
struct BitmapScratch {
  std::vector<uint64_t> words;
  uint64_t* ensure(int64_t cols) {
    const size_t n = static_cast<size_t>((cols + 63) >> 6) + 1;
    if (words.size() < n) words.resize(n, 0);
    return words.data();
  }
  void trim() {
    if (words.size() * sizeof(uint64_t) > (size_t(16) << 20)) std::vector<uint64_t>().swap(words);
  }
};

BitmapScratch& bitmap_scratch() {
  thread_local BitmapScratch s;
  return tls_pinned(s);
}

// Index of the lowest set bit; for 0 some value in [0, 63] (one tzcnt/bsf, no branch: the
// decode below writes candidates for empty words that it then does not count).
inline int ctz_any(uint64_t x) { return __builtin_ctzll(x | (uint64_t(1) << 63)); }

// Room past the last entry that order_row and scan_marks may scribble on (see below).
constexpr int64_t kRowSlack = 8;

// Puts the n distinct columns oc[0..n), all within [lo, hi] (lo and hi among them), in
// increasing order and calls emit(t, j) for each position t with its column j (oc[t] == j
// afterwards). `bits` is all clear before and after, or null (wide products: no bitmap of the
// columns; comparison sorts only).
// The bitmap decode is branch-free for words of up to four set bits: it always writes four
// candidates (so oc needs kRowSlack entries of room past n) and advances by the popcount.
template <class I, class Emit>
inline void order_row(I* __restrict oc, int64_t n, I lo, I hi, uint64_t* __restrict bits, Emit&& emit) {
  if (n <= kInsertionMax) {
    insertion_sort(oc, n);
    for (int64_t t = 0; t < n; ++t) emit(t, oc[t]);
    return;
  }
  const int64_t words = (static_cast<int64_t>(hi) >> 6) - (static_cast<int64_t>(lo) >> 6) + 1;
  const int64_t net = network_sort_cost<I>(n, lo, hi);
  if (net != 0 && (!bits || net <= 3 * n + 37 * words)) {
    network_sort(oc, n, lo, hi);
    for (int64_t t = 0; t < n; ++t) emit(t, oc[t]);
    return;
  }
  if (n <= kRankSortMax && (!bits || rank_is_cheaper(n, words))) {
    rank_sort(oc, n);
    for (int64_t t = 0; t < n; ++t) emit(t, oc[t]);
    return;
  }
  if (bits && bitmap_is_cheaper(n, lo, hi)) {  // no bitmap for wide products
    for (int64_t t = 0; t < n; ++t) bits[oc[t] >> 6] |= uint64_t(1) << (oc[t] & 63);
    int64_t m = 0;
    for (int64_t wi = lo >> 6, we = hi >> 6; wi <= we; ++wi) {
      uint64_t word = bits[wi];
      bits[wi] = 0;
      const I base = static_cast<I>(wi << 6);
      const int cnt = std::popcount(word);
      I* __restrict o = oc + m;
      o[0] = base + static_cast<I>(ctz_any(word));
      word &= word - 1;
      o[1] = base + static_cast<I>(ctz_any(word));
      word &= word - 1;
      o[2] = base + static_cast<I>(ctz_any(word));
      word &= word - 1;
      o[3] = base + static_cast<I>(ctz_any(word));
      word &= word - 1;
      if (cnt > 4) [[unlikely]] {
        int64_t r = 4;
        do {
          o[r++] = base + static_cast<I>(ctz_any(word));
          word &= word - 1;
        } while (word);
      }
      m += cnt;
    }
    for (int64_t t = 0; t < n; ++t) emit(t, oc[t]);
    return;
  }
  std::sort(oc, oc + n);
  for (int64_t t = 0; t < n; ++t) emit(t, oc[t]);
}

// The dense accumulator's marks already tell which columns a row touched (marks[j] == the
// row's stamp): a row whose columns are not too sparse within [lo, hi] is put in order by
// reading the marks over that span, with no sort and no bitmap (the bitmap's read-modify-
// write of one word per entry is a chain of store-forwarding stalls on dense rows). Cost ~
// span * kScanPerColumn against ~ n for setting the bitmap alone.
#if SJ_SPGEMM_AVX2
constexpr int64_t kScanSpanPerEntry = 8;  // AVX2: eight marks per compare, table decode

// kCompress[m]: the positions of the set bits of the byte m, in increasing order, one per byte.
constexpr std::array<uint64_t, 256> make_compress_table() {
  std::array<uint64_t, 256> t{};
  for (int m = 0; m < 256; ++m) {
    uint64_t v = 0;
    int k = 0;
    for (int b = 0; b < 8; ++b)
      if (m & (1 << b)) v |= uint64_t(b) << (8 * k++);
    t[static_cast<size_t>(m)] = v;
  }
  return t;
}
inline constexpr std::array<uint64_t, 256> kCompress = make_compress_table();
#else
constexpr int64_t kScanSpanPerEntry = 2;  // one compare per column
#endif
// DenseAcc::span_row's bound on a row's span per multiply: past it the row cannot fill its
// span (it has at most that many columns), and reading the span would cost more than the row.
constexpr int64_t kSpanRowMaxPerMultiply = 8;

// With the sorting networks, short rows scan only spans that cost less than sorting them
// (~10 instructions per eight columns).
template <class I> inline bool scan_is_cheaper(int64_t n, int64_t lo, int64_t hi) {
  const int64_t span = hi - lo + 1, net = network_sort_cost<I>(n, static_cast<I>(lo), static_cast<I>(hi));
  if (net != 0) return span * 10 <= net * 8;
  return span <= kScanSpanPerEntry * n;
}

// Writes the columns j in [lo, hi] with marks[j] == st to oc in increasing order (lo and hi
// are among them); returns their count. The vector decode writes eight candidates per eight
// columns (kRowSlack entries of room past the count).
template <class I> inline int64_t scan_marks(const uint32_t* __restrict marks, uint32_t st, int64_t lo, int64_t hi,
                                            I* __restrict oc) {
  int64_t m = 0, j = lo;
#if SJ_SPGEMM_AVX2
  const __m256i stv = _mm256_set1_epi32(static_cast<int>(st));
  for (; j + 8 <= hi + 1; j += 8) {
    const __m256i mk = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(marks + j));
    const unsigned bm =
        static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(mk, stv))));
    const __m128i pos = _mm_cvtsi64_si128(static_cast<long long>(kCompress[bm]));
    if constexpr (sizeof(I) == 4) {
      const __m256i c = _mm256_add_epi32(_mm256_cvtepu8_epi32(pos), _mm256_set1_epi32(static_cast<int>(j)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(oc + m), c);
    } else {
      const __m256i base = _mm256_set1_epi64x(j);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(oc + m), _mm256_add_epi64(_mm256_cvtepu8_epi64(pos), base));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(oc + m + 4),
                          _mm256_add_epi64(_mm256_cvtepu8_epi64(_mm_srli_si128(pos, 4)), base));
    }
    m += std::popcount(bm);
  }
#endif
  for (; j <= hi; ++j) {
    oc[m] = static_cast<I>(j);
    m += marks[j] == st;
  }
  return m;
}

// ------------------------------------------------------------------------------------------
// Row kernels shared by both accumulators: rows of A with one or two entries need none.

template <class S, class I, class V>
[[gnu::always_inline]] inline int64_t row_one(const CsView<I, V>& B, V a, int64_t k, I* __restrict oc, V* __restrict ov) {
  const int64_t b0 = B.pos[k], n = B.pos[k + 1] - b0;
  const I* __restrict bc = B.crd + b0;
  const V* __restrict bv = B.val + b0;
  // No call for the short rows of very sparse products: the copies are spelled out, not a
  // loop (GCC turns a copy loop into a memcpy call), and the function is always inlined (at -O3
  // GCC had stopped inlining it). Both cost more than the row itself on a diagonal-like matrix:
  // bcsstm25 A*A 0.061 -> 0.038 ms.
  switch (n) {
    case 4: oc[3] = bc[3]; ov[3] = S::mul(a, bv[3]); [[fallthrough]];
    case 3: oc[2] = bc[2]; ov[2] = S::mul(a, bv[2]); [[fallthrough]];
    case 2: oc[1] = bc[1]; ov[1] = S::mul(a, bv[1]); [[fallthrough]];
    case 1: oc[0] = bc[0]; ov[0] = S::mul(a, bv[0]); [[fallthrough]];
    case 0: return n;
    default: break;
  }
  std::memcpy(oc, bc, sizeof(I) * static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) ov[t] = S::mul(a, bv[t]);
  return n;
}

// Two sorted rows of B merged; equal columns add A's first product to its second (k order).
template <class S, class I, class V>
inline int64_t row_two(const CsView<I, V>& B, V a1, int64_t k1, V a2, int64_t k2, I* __restrict oc,
                       V* __restrict ov) {
  int64_t p = B.pos[k1], pe = B.pos[k1 + 1], q = B.pos[k2], qe = B.pos[k2 + 1];
  const I* bc = B.crd;
  const V* bv = B.val;
  int64_t n = 0;
  while (p < pe && q < qe) {
    const I j1 = bc[p], j2 = bc[q];
    if (j1 < j2) {
      oc[n] = j1;
      ov[n++] = S::mul(a1, bv[p++]);
    } else if (j2 < j1) {
      oc[n] = j2;
      ov[n++] = S::mul(a2, bv[q++]);
    } else {
      oc[n] = j1;
      ov[n++] = S::add(S::mul(a1, bv[p++]), S::mul(a2, bv[q++]));
    }
  }
  for (; p < pe; ++p) {
    oc[n] = bc[p];
    ov[n++] = S::mul(a1, bv[p]);
  }
  for (; q < qe; ++q) {
    oc[n] = bc[q];
    ov[n++] = S::mul(a2, bv[q]);
  }
  return n;
}

template <class I, class V> inline int64_t count_two(const CsView<I, V>& B, int64_t k1, int64_t k2) {
  int64_t p = B.pos[k1], pe = B.pos[k1 + 1], q = B.pos[k2], qe = B.pos[k2 + 1];
  int64_t same = 0;
  while (p < pe && q < qe) {
    const I j1 = B.crd[p], j2 = B.crd[q];
    same += j1 == j2;
    p += j1 <= j2;
    q += j2 <= j1;
  }
  return (B.pos[k1 + 1] - B.pos[k1]) + (B.pos[k2 + 1] - B.pos[k2]) - same;
}

// ------------------------------------------------------------------------------------------
// Dense accumulator.

// `fresh ? p : sum` without a branch: a blend for floating point in the AVX2 build (one
// instruction on the slot's chain of adds), else a load from a two-entry array (a store and a
// forwarded load more on that chain).
template <class V> inline V fresh_or_sum(bool fresh, V p, V sum) {
#if SJ_SPGEMM_AVX2
  if constexpr (std::is_same_v<V, double>) {
    const __m128d m = _mm_castsi128_pd(_mm_cvtsi64_si128(-static_cast<long long>(fresh)));
    return _mm_cvtsd_f64(_mm_blendv_pd(_mm_set_sd(sum), _mm_set_sd(p), m));
  } else if constexpr (std::is_same_v<V, float>) {
    const __m128 m = _mm_castsi128_ps(_mm_cvtsi32_si128(-static_cast<int>(fresh)));
    return _mm_cvtss_f32(_mm_blendv_ps(_mm_set_ss(sum), _mm_set_ss(p), m));
  }
#endif
  const V pick[2] = {sum, p};
  return pick[fresh];
}

// The longest row order_marked_row gives to a sorting network.
constexpr int64_t kNetworkSortMax = 32;

// A dense-accumulator row's n columns oc[0..n) (marked st, all within [lo, hi]) put in order,
// with their sums from vals into ov: by reading the marks over the span when that is cheaper,
// by a sorting network (most rows of sparse products), else by order_row.
template <class I, class V>
inline void order_marked_row(const uint32_t* __restrict mk, const V* __restrict vals, uint32_t st, I lo, I hi,
                             uint64_t* bits, I* __restrict oc, V* __restrict ov, int64_t n) {
  if (n > kInsertionMax && scan_is_cheaper<I>(n, lo, hi)) {
    scan_marks(mk, st, lo, hi, oc);
    for (int64_t t = 0; t < n; ++t) ov[t] = vals[oc[t]];
  } else if (n > kInsertionMax && n <= kNetworkSortMax && network_sort_cost<I>(n, lo, hi) != 0) {
    network_sort(oc, n, lo, hi);
    for (int64_t t = 0; t < n; ++t) ov[t] = vals[oc[t]];
  } else if (n) {
    order_row(oc, n, lo, hi, bits, [&](int64_t t, I j) { ov[t] = vals[j]; });
  }
}

template <class S, class I, class V> struct DenseAcc {
  uint32_t* mk;
  V* vals;
  int64_t cols;
  uint64_t* bits;
  bool branch_free;  // which of the two row loops (see DenseRowLoop in spgemm_gustavson.hpp)

  // Writes row i of C to oc/ov (sorted), returns its length.
  int64_t row(const CsView<I, V>& A, const CsView<I, V>& B, int64_t i, I* __restrict oc, V* __restrict ov,
              DenseScratch<V>& ws) const {
    const int64_t a0 = A.pos[i], a1 = A.pos[i + 1];
    if (a1 - a0 == 1) return row_one<S>(B, A.val[a0], A.crd[a0], oc, ov);
    if (a1 - a0 == 2) return row_two<S>(B, A.val[a0], A.crd[a0], A.val[a0 + 1], A.crd[a0 + 1], oc, ov);
    const uint32_t st = ws.next();
    uint32_t* __restrict mk = this->mk;
    V* __restrict vals = this->vals;
    const I* __restrict bc = B.crd;
    const V* __restrict bv = B.val;
    int64_t n = 0;
    I lo = std::numeric_limits<I>::max(), hi = 0;  // the row's columns span [lo, hi] (B's rows are sorted)
    // The two loops differ only in how the product of column j is accumulated.
    auto each_product = [&](auto&& accumulate) {
      for (int64_t pa = a0; pa < a1; ++pa) {
        const V a = A.val[pa];
        const int64_t k = A.crd[pa];
        const int64_t b0 = B.pos[k], b1 = B.pos[k + 1];
        if (b0 == b1) continue;
        lo = std::min(lo, bc[b0]);
        hi = std::max(hi, bc[b1 - 1]);
        for (int64_t pb = b0; pb < b1; ++pb) accumulate(bc[pb], S::mul(a, bv[pb]));
      }
    };
    if constexpr (ExactIdentity<S>::exists) {
      if (ws.dense_span) {
        const int64_t spanned = span_row(A, B, i, oc, ov, st, ws);
        if (spanned >= 0) return spanned;
      }
    }
    if (branch_free) {
      each_product([&](I j, V p) {  // the column always written to the list, kept if new
        const bool fresh = mk[j] != st;
        mk[j] = st;
        oc[n] = j;
        n += fresh;
        vals[j] = fresh_or_sum(fresh, p, S::add(vals[j], p));  // (a stale slot's sum when new)
      });
    } else {
      each_product([&](I j, V p) {
        if (mk[j] != st) {
          mk[j] = st;
          vals[j] = p;
          oc[n++] = j;
        } else {
          vals[j] = S::add(vals[j], p);
        }
      });
    }
    order_marked_row(mk, vals, st, lo, hi, bits, oc, ov, n);
    if constexpr (ExactIdentity<S>::exists) ws.dense_span = fills_span(n, lo, hi);
    return n;
  }

  // Whether a row of n columns within [lo, hi] is dense in that span (as order_marked_row's
  // scan) and too long for the sorting networks: then the next row, most likely alike (banded
  // and finite-element matrices), runs span_row. Rows the networks sort stay with the list
  // loops: on graphs of such rows (data_walshaw, ~35 columns a row) span rows were slower.
  static bool fills_span(int64_t n, I lo, I hi) {
    return n > kNetworkSortMax && static_cast<int64_t>(hi) - lo + 1 <= kScanSpanPerEntry * n;
  }

  // Row i, where the last row was dense in its span: every product is added to sums[j]
  // (kept at the identity, so the first product of a column needs no test) and marks column
  // j, and the marks over the row's span give its columns in order. No branch per product,
  // no list, no sort: on banded and finite-element matrices 15-30% less time than the list
  // loops (tomography, mbeacxc, bcsstm13, bcsstk08). A row whose span is wider than
  // kSpanRowMaxPerMultiply times its multiplies (so certainly not dense) returns -1 before
  // touching anything: the list loops run it. Same additions in the same order as those loops
  // (the identity's sum with p is p), so the same bits.
  int64_t span_row(const CsView<I, V>& A, const CsView<I, V>& B, int64_t i, I* __restrict oc, V* __restrict ov,
                   uint32_t st, DenseScratch<V>& ws) const {
    const int64_t a0 = A.pos[i], a1 = A.pos[i + 1];
    const I* __restrict bc = B.crd;
    const V* __restrict bv = B.val;
    I lo = std::numeric_limits<I>::max(), hi = 0;
    int64_t multiplies = 0;
    for (int64_t pa = a0; pa < a1; ++pa) {
      const int64_t b0 = B.pos[A.crd[pa]], b1 = B.pos[A.crd[pa] + 1];
      if (b0 == b1) continue;
      lo = std::min(lo, bc[b0]);
      hi = std::max(hi, bc[b1 - 1]);
      multiplies += b1 - b0;
    }
    if (multiplies == 0) return 0;
    if (static_cast<int64_t>(hi) - lo + 1 > kSpanRowMaxPerMultiply * multiplies) {
      ws.dense_span = false;
      return -1;
    }
    const V e = ExactIdentity<S>::value();
    uint32_t* __restrict mk = this->mk;
    V* __restrict sums = ws.sums_at(e);
    for (int64_t pa = a0; pa < a1; ++pa) {
      const V a = A.val[pa];
      const int64_t k = A.crd[pa];
      for (int64_t pb = B.pos[k], pe = B.pos[k + 1]; pb < pe; ++pb) {
        const I j = bc[pb];
        mk[j] = st;
        sums[j] = S::add(sums[j], S::mul(a, bv[pb]));
      }
    }
    const int64_t n = scan_marks(mk, st, lo, hi, oc);
    for (int64_t t = 0; t < n; ++t) {
      ov[t] = sums[oc[t]];
      sums[oc[t]] = e;
    }
    ws.dense_span = fills_span(n, lo, hi);
    return n;
  }

  // Number of distinct columns of row i (the symbolic pass).
  int64_t count(const CsView<I, V>& A, const CsView<I, V>& B, int64_t i, DenseScratch<V>& ws) const {
    const int64_t a0 = A.pos[i], a1 = A.pos[i + 1];
    if (a1 - a0 == 1) return B.pos[A.crd[a0] + 1] - B.pos[A.crd[a0]];
    if (a1 - a0 == 2) return count_two(B, A.crd[a0], A.crd[a0 + 1]);
    const uint32_t st = ws.next();
    uint32_t* __restrict mk = this->mk;
    int64_t n = 0;
    for (int64_t pa = a0; pa < a1; ++pa) {
      const int64_t k = A.crd[pa];
      for (int64_t pb = B.pos[k], pe = B.pos[k + 1]; pb < pe; ++pb) {
        uint32_t& m = mk[B.crd[pb]];
        n += m != st;
        m = st;
      }
    }
    return n;
  }
};

// The dense accumulator over this thread's workspace for `cols` columns.
template <class S, class I, class V>
DenseAcc<S, I, V> dense_acc(DenseScratch<V>& ws, int64_t cols, uint64_t* bits, bool branch_free) {
  ws.ensure(cols);
  return DenseAcc<S, I, V>{ws.marks.data(), ws.vals.data(), cols, bits, branch_free};
}

// ------------------------------------------------------------------------------------------
// Hash accumulator: a per-row open-addressing table of 2^b >= 2 * min(row flops, cols) slots
// (load <= 1/2), linear probing, Fibonacci hashing; the table is cleared after each row, which
// costs O(its size) = O(row flops).

template <class I> inline uint64_t hash_slot(I j, int shift) {
  return (static_cast<uint64_t>(j) * 0x9E3779B97F4A7C15ull) >> shift;
}

template <class S, class I, class V> struct HashAcc {
  int64_t cols;
  uint64_t* bits;

  // The open-addressing table of a row with entries [a0, a1) of A: twice the most distinct
  // columns it can have (its multiplies, at most B's columns), a power of two; cap 0 when the
  // row forms no product.
  struct Table {
    uint64_t cap = 0;
    int shift = 0;
  };
  Table table(const CsView<I, V>& A, const CsView<I, V>& B, int64_t a0, int64_t a1) const {
    int64_t flops = 0;
    for (int64_t pa = a0; pa < a1; ++pa) flops += B.pos[A.crd[pa] + 1] - B.pos[A.crd[pa]];
    if (flops == 0) return {};
    const uint64_t cap = std::bit_ceil(static_cast<uint64_t>(2 * std::min(flops, cols)));
    return {cap, 64 - std::countr_zero(cap)};
  }

  int64_t row(const CsView<I, V>& A, const CsView<I, V>& B, int64_t i, I* __restrict oc, V* __restrict ov,
              HashScratch<I, V>& ws) const {
    const int64_t a0 = A.pos[i], a1 = A.pos[i + 1];
    if (a1 - a0 == 1) return row_one<S>(B, A.val[a0], A.crd[a0], oc, ov);
    if (a1 - a0 == 2) return row_two<S>(B, A.val[a0], A.crd[a0], A.val[a0 + 1], A.crd[a0 + 1], oc, ov);
    const Table tb = table(A, B, a0, a1);
    if (tb.cap == 0) return 0;
    const uint64_t cap = tb.cap, mask = tb.cap - 1;
    const int shift = tb.shift;
    I* __restrict keys = ws.ensure(cap);
    V* __restrict vals = ws.vals.data();
    int64_t n = 0;
    I lo = std::numeric_limits<I>::max(), hi = 0;  // the row's columns span [lo, hi] (B's rows are sorted)
    for (int64_t pa = a0; pa < a1; ++pa) {
      const V a = A.val[pa];
      const int64_t k = A.crd[pa];
      const int64_t b0 = B.pos[k], b1 = B.pos[k + 1];
      if (b0 == b1) continue;
      lo = std::min(lo, B.crd[b0]);
      hi = std::max(hi, B.crd[b1 - 1]);
      for (int64_t pb = b0, pe = b1; pb < pe; ++pb) {
        const I j = B.crd[pb];
        const V p = S::mul(a, B.val[pb]);
        uint64_t h = hash_slot(j, shift);
        while (true) {
          const I key = keys[h];
          if (key == j) {
            vals[h] = S::add(vals[h], p);
            break;
          }
          if (key == I(-1)) {
            keys[h] = j;
            vals[h] = p;
            oc[n++] = j;
            break;
          }
          h = (h + 1) & mask;
        }
      }
    }
    order_row(oc, n, lo, hi, bits, [&](int64_t t, I j) {
      uint64_t h = hash_slot(j, shift);
      while (keys[h] != j) h = (h + 1) & mask;
      ov[t] = vals[h];
    });
    std::fill_n(keys, cap, I(-1));
    return n;
  }

  // Number of distinct columns of row i (the symbolic pass), in a table of the same size.
  int64_t count(const CsView<I, V>& A, const CsView<I, V>& B, int64_t i, HashScratch<I, V>& ws) const {
    const int64_t a0 = A.pos[i], a1 = A.pos[i + 1];
    if (a1 - a0 == 1) return B.pos[A.crd[a0] + 1] - B.pos[A.crd[a0]];
    if (a1 - a0 == 2) return count_two(B, A.crd[a0], A.crd[a0 + 1]);
    const Table tb = table(A, B, a0, a1);
    if (tb.cap == 0) return 0;
    const uint64_t cap = tb.cap, mask = tb.cap - 1;
    const int shift = tb.shift;
    I* __restrict keys = ws.ensure(cap);
    int64_t n = 0;
    for (int64_t pa = a0; pa < a1; ++pa) {
      const int64_t k = A.crd[pa];
      for (int64_t pb = B.pos[k], pe = B.pos[k + 1]; pb < pe; ++pb) {
        const I j = B.crd[pb];
        uint64_t h = hash_slot(j, shift);
        while (keys[h] != j && keys[h] != I(-1)) h = (h + 1) & mask;
        if (keys[h] == I(-1)) {
          keys[h] = j;
          ++n;
        }
      }
    }
    std::fill_n(keys, cap, I(-1));
    return n;
  }
};

// ------------------------------------------------------------------------------------------
// Drivers.

// Software prefetch of B's rows a little ahead of the row of A being computed, for products
// whose B does not stay in L2: every entry of A reads a row of B at a random place, and each
// such row is otherwise a cache miss the row loop waits for. Two stages over A's entries (one
// array across rows, so the look-ahead runs into the next rows): B.pos[k] 2*kAhead entries
// ahead, then the first lines of row k's columns and values kAhead entries ahead.
template <class I, class V> class BRowPrefetch {
 public:
  static constexpr int64_t kAhead = 16;
  static constexpr int64_t kMinBytes = int64_t(1) << 20;  // B's columns and values, about L2
  BRowPrefetch(const CsView<I, V>& A, const CsView<I, V>& B, int64_t first_row)
      : A_(A), B_(B), end_(A.pos[A.outer]), next_(A.pos[first_row]),
        on_(B.pos[B.outer] * static_cast<int64_t>(sizeof(I) + sizeof(V)) > kMinBytes) {}
  // Called before row i is computed.
  void before_row(int64_t i) {
    if (!on_) return;
    const int64_t target = std::min(A_.pos[i + 1] + kAhead, end_);
    for (; next_ < target; ++next_) {
      if (next_ + kAhead < end_) __builtin_prefetch(B_.pos + A_.crd[next_ + kAhead]);
      const int64_t b = B_.pos[A_.crd[next_]];
      __builtin_prefetch(B_.crd + b);
      __builtin_prefetch(B_.val + b);
    }
  }

 private:
  const CsView<I, V>& A_;
  const CsView<I, V>& B_;
  const int64_t end_;
  int64_t next_;
  const bool on_;
};

// The multiply count: a bound on the output's entries in a few instructions per entry of A.
template <class I, class V> int64_t total_flops(const CsView<I, V>& A, const CsView<I, V>& B) {
  return multiply_count(A.crd + A.pos[0], A.pos[A.outer] - A.pos[0], B.pos);
}

// Up to this size the result's arrays are sized by the multiply count; past it by the tighter
// per-row bound below, which costs ~4x as much to compute (a quarter of the product itself on
// matrices with ~4 entries per row), so that a large result holds no more than it may use.
inline constexpr int64_t kFlopsBoundBytes = int64_t(4) << 20;

// Per-row upper bounds min(row flops, cols), summed.
template <class I, class V>
int64_t output_upper_bound(const CsView<I, V>& A, const CsView<I, V>& B) {
  // Row i of C has at most min(flops_i, hi_i - lo_i + 1) entries, where [lo_i, hi_i] spans
  // the columns of the rows of B it combines (tight for banded and mesh matrices, whose
  // products repeat columns many times). A tight bound keeps the result allocation small, so
  // the C library can recycle it across calls instead of mapping (and faulting in) new pages.
  int64_t total = 0;
  for (int64_t i = 0; i < A.outer; ++i) {
    int64_t f = 0, lo = std::numeric_limits<int64_t>::max(), hi = -1;
    for (int64_t pa = A.pos[i], pe = A.pos[i + 1]; pa < pe; ++pa) {
      const int64_t b0 = B.pos[A.crd[pa]], b1 = B.pos[A.crd[pa] + 1];
      if (b0 == b1) continue;
      f += b1 - b0;
      lo = std::min<int64_t>(lo, B.crd[b0]);
      hi = std::max<int64_t>(hi, B.crd[b1 - 1]);
    }
    if (f > 0) total += std::min(f, hi - lo + 1);
  }
  return total;
}

// Whether arrays of the upper bound are allocated, or the exact size is counted first: not
// when they are large, nor over half the memory cap (the whole result, positions included, is
// charged against the cap: a bound over it must not refuse a result that fits).
bool use_upper_bound(int64_t ub, int entry_bytes, int64_t rows, const Allocator& alloc) {
  if (ub > std::numeric_limits<int64_t>::max() / 16) return false;
  const int64_t bytes = ub * entry_bytes;
  if (alloc.memory_cap() != 0 &&
      estimate_bytes(ub + kRowSlack, static_cast<size_t>(entry_bytes), estimate_bytes(rows + 1, sizeof(int64_t))) >
          alloc.memory_cap() / 2)
    return false;
  return bytes <= kUpperBoundBytes;
}

// An accumulator that drops some products (a complemented mask) says so: its rows of one
// entry are not B's row copied.
template <class Acc> constexpr bool kFiltersProducts = requires { Acc::kDropsProducts; };

// `flops`: total_flops(A, B) where the caller has it, else -1.
template <class S, class I, class V, class Acc, class Scratch>
Tensor sparse_product(const CsView<I, V>& A, const CsView<I, V>& B, const Acc& acc, Scratch& ws,
                      const Allocator& alloc, ValueType vt, int64_t flops = -1) {
  const int64_t rows = A.outer, cols = B.inner;
  const IndexType it = index_type_of<I>();
  constexpr int entry = sizeof(I) + sizeof(V);
  int64_t ub = flops >= 0 ? flops : total_flops(A, B);
  if (ub > kFlopsBoundBytes / entry || !use_upper_bound(ub, entry, rows, alloc)) ub = output_upper_bound(A, B);
  if (use_upper_bound(ub, entry, rows, alloc)) {
    Tensor C = make_compressed_matrix(alloc, true, rows, cols, ub + kRowSlack, it, vt);
    int64_t* pos = C.levels[1].pos.as_mut<int64_t>();
    I* crd = C.levels[1].crd.as_mut<I>();
    V* val = C.values.as_mut<V>();
    int64_t nz = 0;
    pos[0] = 0;
    BRowPrefetch<I, V> ahead(A, B, 0);
    for (int64_t i = 0; i < rows; ++i) {
      ahead.before_row(i);
      const int64_t a0 = A.pos[i], a1 = A.pos[i + 1];
      if (a1 - a0 == 1 && !kFiltersProducts<Acc>) nz += row_one<S>(B, A.val[a0], A.crd[a0], crd + nz, val + nz);  // no call
      else if (a1 != a0) nz += acc.row(A, B, i, crd + nz, val + nz, ws);
      pos[i + 1] = nz;
    }
    return C;
  }
  // Large output: count first (with the same accumulator), then fill arrays of the exact size.
  std::vector<int64_t> counts(static_cast<size_t>(rows) + 1, 0);
  BRowPrefetch<I, V> count_ahead(A, B, 0);
  for (int64_t i = 0; i < rows; ++i) {
    count_ahead.before_row(i);
    counts[i + 1] = counts[i] + (A.pos[i] == A.pos[i + 1] ? 0 : acc.count(A, B, i, ws));
  }
  const int64_t nnz = counts[rows];
  Tensor C = make_compressed_matrix(alloc, true, rows, cols, nnz + kRowSlack, it, vt);
  int64_t* pos = C.levels[1].pos.as_mut<int64_t>();
  std::memcpy(pos, counts.data(), sizeof(int64_t) * (static_cast<size_t>(rows) + 1));
  I* crd = C.levels[1].crd.as_mut<I>();
  V* val = C.values.as_mut<V>();
  BRowPrefetch<I, V> fill_ahead(A, B, 0);
  for (int64_t i = 0; i < rows; ++i) {
    fill_ahead.before_row(i);
    if (pos[i] != pos[i + 1]) acc.row(A, B, i, crd + pos[i], val + pos[i], ws);
  }
  return C;
}

// The same on several threads (kernels/sparse_assembly.hpp): a parallel pass over A's rows
// (split by nnz) records each row's multiply count and output bound; rows are then split by
// multiplies and each chunk runs `make()`'s accumulator (the running thread's workspaces)
// over its rows, into its own piece (or, for outputs too large for the bound, counts first).
template <class S, class I, class V, class Make>
Tensor sparse_product_parallel(const CsView<I, V>& A, const CsView<I, V>& B, Make&& make, const Allocator& alloc,
                               ValueType vt, Workers& w) {
  const int64_t rows = A.outer, cols = B.inner;
  std::vector<int64_t> flops(static_cast<size_t>(rows) + 1), bound(static_cast<size_t>(rows) + 1);
  flops[0] = bound[0] = 0;
  w.run(partition_by_prefix(A.pos, rows, w, "A's nnz per row"), [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      int64_t f = 0, lo = std::numeric_limits<int64_t>::max(), hi = -1;
      for (int64_t pa = A.pos[i], pe = A.pos[i + 1]; pa < pe; ++pa) {
        const int64_t b0 = B.pos[A.crd[pa]], b1 = B.pos[A.crd[pa] + 1];
        if (b0 == b1) continue;
        f += b1 - b0;
        lo = std::min<int64_t>(lo, B.crd[b0]);
        hi = std::max<int64_t>(hi, B.crd[b1 - 1]);
      }
      flops[i + 1] = f + (A.pos[i + 1] - A.pos[i]) * 4 + 4;  // work: products, A's entries, the row
      bound[i + 1] = f > 0 ? std::min(f, hi - lo + 1) : 0;
    }
  });
  for (int64_t i = 0; i < rows; ++i) {
    flops[i + 1] += flops[i];
    bound[i + 1] += bound[i];
  }
  const Partition part = partition_by_prefix(flops.data(), rows, w, "multiplies per row (flops)");
  if (use_upper_bound(bound[rows], sizeof(I) + sizeof(V), rows, alloc))
    return assemble_by_pieces<I, V>(w, part, rows, cols, bound.data(), kRowSlack, alloc, vt, false,
                                    [&](int64_t r0, int64_t r1, I* oc, V* ov, int64_t* ends) {
                                      auto [acc, ws] = make();
                                      int64_t nz = 0;
                                      BRowPrefetch<I, V> ahead(A, B, r0);
                                      for (int64_t i = r0; i < r1; ++i) {
                                        ahead.before_row(i);
                                        if (A.pos[i] != A.pos[i + 1]) nz += acc.row(A, B, i, oc + nz, ov + nz, *ws);
                                        ends[i] = nz;
                                      }
                                      return nz;
                                    });
  return assemble_two_pass<I, V>(
      w, part, rows, cols, kRowSlack, alloc, vt,
      [&](int64_t r0, int64_t r1, int64_t* counts) {
        auto [acc, ws] = make();
        BRowPrefetch<I, V> ahead(A, B, r0);
        for (int64_t i = r0; i < r1; ++i) {
          ahead.before_row(i);
          counts[i] = A.pos[i] == A.pos[i + 1] ? 0 : acc.count(A, B, i, *ws);
        }
      },
      [&](int64_t r0, int64_t r1, I* crd, V* val, const int64_t* pos) {
        auto [acc, ws] = make();
        // A row may write up to kRowSlack entries past its end (order_row, scan_marks): the
        // rows whose slack reaches the next chunk (another thread's) go through a scratch row.
        thread_local std::vector<I> sc;
        thread_local std::vector<V> sv;
        BRowPrefetch<I, V> ahead(A, B, r0);
        for (int64_t i = r0; i < r1; ++i) {
          ahead.before_row(i);
          if (pos[i] == pos[i + 1]) continue;
          if (r1 == rows || pos[i + 1] + kRowSlack <= pos[r1]) {
            acc.row(A, B, i, crd + pos[i], val + pos[i], *ws);
            continue;
          }
          const size_t len = static_cast<size_t>(pos[i + 1] - pos[i]);
          if (sc.size() < len + kRowSlack) {
            sc.resize(len + kRowSlack);
            sv.resize(len + kRowSlack);
          }
          acc.row(A, B, i, sc.data(), sv.data(), *ws);
          std::memcpy(crd + pos[i], sc.data(), sizeof(I) * len);
          std::memcpy(val + pos[i], sv.data(), sizeof(V) * len);
        }
        if (sc.size() * (sizeof(I) + sizeof(V)) > (size_t(64) << 20)) {
          std::vector<I>().swap(sc);
          std::vector<V>().swap(sv);
        }
      });
}

// A bound on A*B's multiplies: nnz(A) times B's longest row (saturated), in one sequential
// pass over B's positions, where the count itself looks B up at every entry of A.
template <class I, class V> int64_t multiply_bound(const CsView<I, V>& A, const CsView<I, V>& B) {
  int64_t longest = 0;
  for (int64_t k = 0; k < B.outer; ++k) longest = std::max(longest, B.pos[k + 1] - B.pos[k]);
  const int64_t a = A.nnz();
  if (longest == 0 || a == 0) return 0;
  return a > std::numeric_limits<int64_t>::max() / 4 / longest ? std::numeric_limits<int64_t>::max() / 4 : a * longest;
}

// Whether a product goes to sparse_product_parallel: only with the work that its partition
// needs for more than one chunk (worth_parallel on the same units: multiplies, plus 4 per
// entry and per row of A). Below that it would run one chunk anyway, after its pass over A
// for every row's bound and the arrays of them: at 2 threads a small product took 1.04-1.48x
// its 1-thread time (494_bus A*A 1.14x, alternated in one process). The multiply count is taken only
// where A alone does not settle it (then A is small and the count cheap), and kept in `flops`
// for the serial product; else `flops` is left as it was.
template <class I, class V>
bool product_parallel(const CsView<I, V>& A, const CsView<I, V>& B, Workers& w, int64_t& flops) {
  if (w.threads <= 1) return false;
  const int64_t base = 4 * (A.pos[A.outer] - A.pos[0] + A.outer);
  if (base >= parallel_tuning().min_parallel_work.load(std::memory_order_relaxed)) return worth_parallel(w, base);
  if (flops < 0) flops = total_flops(A, B);
  return worth_parallel(w, base + flops);
}

template <class S, class I, class V>
void dense_product(const CsView<I, V>& A, const CsView<I, V>& B, V* __restrict C, Workers& w) {
  const int64_t rows = A.outer, cols = B.inner;
  // Rows are disjoint slices of C: each chunk zeroes and fills its own.
  w.run(partition_rows(rows, w, "A's nnz per row, plus the row's fill", [&](int64_t i) {
          return (A.pos[i + 1] - A.pos[i]) * 8 + cols / 4;
        }),
        [&](int64_t r0, int64_t r1) {
  std::fill_n(C + r0 * cols, (r1 - r0) * cols, S::zero());
  auto& ms = mark_scratch();
  uint32_t* __restrict mark = ms.ensure(cols);
  for (int64_t i = r0; i < r1; ++i) {
    V* __restrict Ci = C + i * cols;
    const int64_t a0 = A.pos[i], a1 = A.pos[i + 1];
    if (a1 - a0 == 1) {
      const V a = A.val[a0];
      const int64_t k = A.crd[a0];
      for (int64_t pb = B.pos[k], pe = B.pos[k + 1]; pb < pe; ++pb) Ci[B.crd[pb]] = S::mul(a, B.val[pb]);
      continue;
    }
    if (a1 == a0) continue;
    const uint32_t st = ms.next();
    mark = ms.marks.data();
    for (int64_t pa = a0; pa < a1; ++pa) {
      const V a = A.val[pa];
      const int64_t k = A.crd[pa];
      for (int64_t pb = B.pos[k], pe = B.pos[k + 1]; pb < pe; ++pb) {
        const I j = B.crd[pb];
        const V p = S::mul(a, B.val[pb]);
        if (mark[j] != st) {
          mark[j] = st;
          Ci[j] = p;
        } else {
          Ci[j] = S::add(Ci[j], p);
        }
      }
    }
  }
  ms.trim();
        });
}

[[maybe_unused]] void check_dims(const Tensor& A, const Tensor& B) {  // (the AVX2 build's copy is unused)
  if (A.dims[1] != B.dims[0])
    fail(SJ_ERR_SHAPE_MISMATCH, "spgemm: A is ", A.dims[0], "x", A.dims[1], " but B is ", B.dims[0], "x",
         B.dims[1]);
}

// Whether Gustavson's dense workspace is too wide for this product (see spgemm_gustavson.hpp).
// The work (multiplies plus A's entries) is counted, in O(nnz(A)), only when the workspace is
// past the floor.
template <class I, class V> bool product_is_wide(const CsView<I, V>& A, const CsView<I, V>& B, const Allocator& alloc) {
  const size_t bytes = dense_workspace_bytes(B.inner, sizeof(V));
  if (bytes <= static_cast<size_t>(kDenseWorkspaceFloor) && !alloc.over_cap(bytes)) return false;
  const double work = static_cast<double>(A.nnz()) + static_cast<double>(total_flops(A, B));
  return dense_workspace_too_wide(B.inner, sizeof(V), work, alloc.memory_cap());
}

// A x B into a dense row-major result.
template <class S, class I, class V>
Tensor dense_result(const CsView<I, V>& A, const CsView<I, V>& B, const Allocator& alloc, ValueType vt, Workers& w) {
  int64_t dims[2] = {A.outer, B.inner};
  Tensor C = make_dense(alloc, 2, dims, vt);
  dense_product<S>(A, B, C.values.as_mut<V>(), w);
  return C;
}

template <class S, class I, class V>
Tensor spgemm_typed(const Tensor& At, const Tensor& Bt, bool dense, SpgemmAccumulator kind, const Allocator& alloc,
                    Workers& w, const TimedChoice* loop_choice) {
  const auto A = cs_view<I, V>(At);
  const auto B = cs_view<I, V>(Bt);
  // A wide product (dense workspace large next to the work, or over the memory cap) runs the
  // hash accumulator without the column bitmap: workspaces proportional to the work.
  const bool wide = !dense && product_is_wide(A, B, alloc);
  if (wide) kind = SpgemmAccumulator::Hash;
  auto bits = [&]() { return wide ? nullptr : bitmap_scratch().ensure(B.inner); };
  // The dense accumulator's row loop: pinned by a test, else the plan's timed choice (way 0,
  // the branchy loop, for a one-off product); a timed execution reports its ticks. Products of
  // a few thousand multiplies (a few microseconds) keep the branchy loop: on them the trials
  // misjudged (repeated, the predictor learns the whole product's branch pattern, which
  // alternating the loops hides), and there is little to gain.
  bool timed = false, warm_up = false;
  int way = 0;
  int64_t flops = -1;  // counted at most once: for the thread count, or while the choice is open
  const bool parallel = !dense && product_parallel(A, B, w, flops);
  if (!dense && kind == SpgemmAccumulator::Dense) {
    const DenseRowLoop pinned = dense_row_loop();
    if (pinned != DenseRowLoop::Timed) {
      way = pinned == DenseRowLoop::BranchFree ? 1 : 0;
    } else if (loop_choice) {
      if (loop_choice->settled() < 0) {
        if (flops < 0) flops = total_flops(A, B);
        if (flops < kTimedRowLoopMinFlops) loop_choice->settle(0, kRowLoopSmallProduct);
      }
      way = loop_choice->begin(&timed);
      warm_up = !timed && loop_choice->settled() < 0;
    }
  }
  const uint64_t t0 = timed ? TimedChoice::now() : 0;
  // One named result, built in place by prvalue returns and returned without a move (a Tensor
  // move is ~100 instructions: a tenth of a tiny product). The workspaces are trimmed on the
  // way out of each branch.
  Tensor C = [&]() -> Tensor {
    if (dense) return dense_result<S>(A, B, alloc, At.value_type, w);
    absl::Cleanup trim_bits = [] { bitmap_scratch().trim(); };
    if (parallel) {
      // Each chunk takes the workspaces of the thread that runs it.
      absl::Cleanup trim = [] {
        dense_scratch<V>().trim();
        hash_scratch<I, V>().trim();
      };
      return kind == SpgemmAccumulator::Dense
                 ? sparse_product_parallel<S>(A, B, [&] {
                     auto& ws = dense_scratch<V>();
                     return std::make_pair(dense_acc<S, I, V>(ws, B.inner, bits(), way == 1), &ws);
                   }, alloc, At.value_type, w)
                 : sparse_product_parallel<S>(A, B, [&] {
                     return std::make_pair(HashAcc<S, I, V>{B.inner, bits()}, &hash_scratch<I, V>());
                   }, alloc, At.value_type, w);
    }
    if (kind == SpgemmAccumulator::Dense) {
      auto& ws = dense_scratch<V>();
      absl::Cleanup trim = [&ws] { ws.trim(); };
      return sparse_product<S>(A, B, dense_acc<S, I, V>(ws, B.inner, bits(), way == 1), ws, alloc, At.value_type,
                               flops);
    }
    auto& ws = hash_scratch<I, V>();
    absl::Cleanup trim = [&ws] { ws.trim(); };
    return sparse_product<S>(A, B, HashAcc<S, I, V>{B.inner, bits()}, ws, alloc, At.value_type, flops);
  }();
  if (timed) loop_choice->end(way, TimedChoice::now() - t0);
  // The warm-up's result tells how often a row's products repeat a column: often enough, and
  // the trials would only run the slower loop twice (kBranchyMultipliesPerEntry).
  if (warm_up && C.nnz() > 0 && flops >= kBranchyMultipliesPerEntry * C.nnz())
    loop_choice->settle(0, kRowLoopRepeatedColumns);
  return C;
}

// ------------------------------------------------------------------------------------------
// Values only, over a structure kept from an earlier execution (kernels/spgemm_structure.hpp).

// Rows r0..r1 of C's values, C's columns given (cpos, ccrd). Products are added in the full
// kernel's order (A's row in increasing k, each B row in order), so the values are the same
// bit for bit. No test per product where the semiring has an exact identity.
template <class S, class I, class V>
void values_only_rows(const CsView<I, V>& A, const CsView<I, V>& B, const int64_t* __restrict cpos,
                      const I* __restrict ccrd, V* __restrict out, int64_t r0, int64_t r1, DenseScratch<V>& ws) {
  ws.ensure(B.inner);
  V* __restrict acc = ws.vals.data();
  const I* __restrict bc = B.crd;
  const V* __restrict bv = B.val;
  BRowPrefetch<I, V> ahead(A, B, r0);
  for (int64_t i = r0; i < r1; ++i) {
    ahead.before_row(i);
    const int64_t c0 = cpos[i], c1 = cpos[i + 1];
    if (c0 == c1) continue;
    const int64_t a0 = A.pos[i], a1 = A.pos[i + 1];
    if (a1 - a0 == 1) {  // B's row k times a: its columns, in its order
      const V a = A.val[a0];
      const V* __restrict row = bv + B.pos[A.crd[a0]];
      for (int64_t t = 0; t < c1 - c0; ++t) out[c0 + t] = S::mul(a, row[t]);
      continue;
    }
    if constexpr (ExactIdentity<S>::exists) {
      const V e = ExactIdentity<S>::value();
      for (int64_t t = c0; t < c1; ++t) acc[ccrd[t]] = e;
      for (int64_t pa = a0; pa < a1; ++pa) {
        const V a = A.val[pa];
        const int64_t k = A.crd[pa];
        for (int64_t pb = B.pos[k], pe = B.pos[k + 1]; pb < pe; ++pb) {
          const I j = bc[pb];
          acc[j] = S::add(acc[j], S::mul(a, bv[pb]));
        }
      }
    } else {
      const uint32_t st = ws.next();
      uint32_t* __restrict mk = ws.marks.data();
      for (int64_t pa = a0; pa < a1; ++pa) {
        const V a = A.val[pa];
        const int64_t k = A.crd[pa];
        for (int64_t pb = B.pos[k], pe = B.pos[k + 1]; pb < pe; ++pb) {
          const I j = bc[pb];
          const V p = S::mul(a, bv[pb]);
          if (mk[j] != st) {
            mk[j] = st;
            acc[j] = p;
          } else {
            acc[j] = S::add(acc[j], p);
          }
        }
      }
    }
    for (int64_t t = c0; t < c1; ++t) out[t] = acc[ccrd[t]];
  }
}

// C = A*B over the kept structure s: C shares s's position and coordinate arrays; its values
// are allocated and computed here, rows split by s's per-row work on several threads.
template <class S, class I, class V>
Tensor values_only_typed(const Tensor& At, const Tensor& Bt, const SpgemmStructure& s, const Allocator& alloc,
                         Workers& w) {
  const auto A = cs_view<I, V>(At);
  const auto B = cs_view<I, V>(Bt);
  const Tensor& P = s.pattern;
  const int64_t nnz = P.nnz();
  alloc.charge(estimate_bytes(nnz, sizeof(V)), [&] { return cat("the values of a ", P.describe()); });
  Tensor C = P;
  C.value_type = At.value_type;
  C.values = Buffer::allocate_array(alloc, nnz, sizeof(V));
  V* out = C.values.as_mut<V>();
  const int64_t* cpos = P.levels[1].pos.as<int64_t>();
  const I* ccrd = P.levels[1].crd.as<I>();
  absl::Cleanup trim = [] { dense_scratch<V>().trim(); };
  if (w.threads > 1) {
    w.run(partition_by_prefix(s.work.data(), A.outer, w, "multiplies per row (kept structure)"),
          [&](int64_t r0, int64_t r1) { values_only_rows<S>(A, B, cpos, ccrd, out, r0, r1, dense_scratch<V>()); });
  } else {
    values_only_rows<S>(A, B, cpos, ccrd, out, 0, A.outer, dense_scratch<V>());
  }
  return C;
}

// ------------------------------------------------------------------------------------------
// Masked products.

template <class I> CsView<I, uint8_t> mask_view(const Tensor& M) {
  CsView<I, uint8_t> v;
  v.outer = M.dims[0];
  v.inner = M.dims[1];
  v.pos = M.levels[1].pos.as<int64_t>();
  v.crd = M.levels[1].crd.as<I>();
  return v;
}

// Saxpy-then-mask rows r0..r1 for wide products: each product's column is looked up in the
// (sorted) mask row; slot t of the mask row accumulates as the dense array's column would, so
// the values are the same. Workspace: the longest mask row of the chunk, not the columns.
template <class S, class I, class V>
int64_t masked_saxpy_search_rows(const CsView<I, uint8_t>& M, const CsView<I, V>& A, const CsView<I, V>& B, int64_t r0,
                                 int64_t r1, I* __restrict crd, V* __restrict val, int64_t* ends) {
  thread_local std::vector<V> acc_tls;
  thread_local std::vector<uint8_t> seen_tls;  // all zero between rows
  std::vector<V>& acc = tls_pinned(acc_tls);
  std::vector<uint8_t>& seen = tls_pinned(seen_tls);
  int64_t nz = 0;
  for (int64_t i = r0; i < r1; ++i) {
    const int64_t m0 = M.pos[i], m1 = M.pos[i + 1], a0 = A.pos[i], a1 = A.pos[i + 1];
    if (m0 != m1 && a0 != a1) {
      const size_t len = static_cast<size_t>(m1 - m0);
      if (acc.size() < len) {
        acc.resize(len);
        seen.resize(len, 0);
      }
      const I* mrow = M.crd + m0;
      for (int64_t pa = a0; pa < a1; ++pa) {
        const V a = A.val[pa];
        const int64_t k = A.crd[pa];
        for (int64_t pb = B.pos[k], pe = B.pos[k + 1]; pb < pe; ++pb) {
          const I j = B.crd[pb];
          const I* at = std::lower_bound(mrow, mrow + len, j);
          if (at == mrow + len || *at != j) continue;
          const size_t t = static_cast<size_t>(at - mrow);
          if (!seen[t]) {
            seen[t] = 1;
            acc[t] = S::mul(a, B.val[pb]);
          } else {
            acc[t] = S::add(acc[t], S::mul(a, B.val[pb]));
          }
        }
      }
      for (size_t t = 0; t < len; ++t)
        if (seen[t]) {
          seen[t] = 0;
          crd[nz] = mrow[t];
          val[nz++] = acc[t];
        }
    }
    ends[i] = nz;
  }
  if (acc.size() * (sizeof(V) + 1) > (size_t(64) << 20)) {
    std::vector<V>().swap(acc);
    std::vector<uint8_t>().swap(seen);
  }
  return nz;
}

// C<!M> = A*B, the complemented mask: Gustavson's row with the mask row's columns blocked.
// The row's other columns are found and ordered as in the unmasked product, so results are
// bounded and assembled like its (sparse_product_parallel); products are added in the same
// order, so C<!M> is A*B's entries off the mask, bit for bit.
//
// Dense accumulator: the mask row's columns get the stamp `blocked`, the row's own columns the
// next one; a product on a blocked column is dropped. The row is put in order as DenseAcc's
// (order_marked_row).
template <class S, class I, class V> struct ComplementDenseAcc {
  static constexpr bool kDropsProducts = true;
  CsView<I, uint8_t> M;
  uint32_t* mk;
  V* vals;
  uint64_t* bits;

  // Blocks row i's mask columns; returns the stamp of the row's own columns (blocked + 1).
  uint32_t block(int64_t i, DenseScratch<V>& ws) const {
    const uint32_t blocked = ws.next(2);
    for (int64_t pm = M.pos[i]; pm < M.pos[i + 1]; ++pm) mk[M.crd[pm]] = blocked;
    return blocked + 1;
  }
  int64_t row(const CsView<I, V>& A, const CsView<I, V>& B, int64_t i, I* __restrict oc, V* __restrict ov,
              DenseScratch<V>& ws) const {
    const uint32_t st = block(i, ws), blocked = st - 1;
    uint32_t* __restrict mk = this->mk;
    V* __restrict vals = this->vals;
    const I* __restrict bc = B.crd;
    const V* __restrict bv = B.val;
    int64_t n = 0;
    I lo = std::numeric_limits<I>::max(), hi = 0;  // a span holding the row's columns (blocked ones too)
    for (int64_t pa = A.pos[i]; pa < A.pos[i + 1]; ++pa) {
      const V a = A.val[pa];
      const int64_t k = A.crd[pa];
      const int64_t b0 = B.pos[k], b1 = B.pos[k + 1];
      if (b0 == b1) continue;
      lo = std::min(lo, bc[b0]);
      hi = std::max(hi, bc[b1 - 1]);
      for (int64_t pb = b0; pb < b1; ++pb) {
        const I j = bc[pb];
        const uint32_t m = mk[j];
        if (m == blocked) continue;
        const V p = S::mul(a, bv[pb]);
        if (m != st) {
          mk[j] = st;
          vals[j] = p;
          oc[n++] = j;
        } else {
          vals[j] = S::add(vals[j], p);
        }
      }
    }
    order_marked_row(mk, vals, st, lo, hi, bits, oc, ov, n);
    return n;
  }
  int64_t count(const CsView<I, V>& A, const CsView<I, V>& B, int64_t i, DenseScratch<V>& ws) const {
    const uint32_t st = block(i, ws), blocked = st - 1;
    int64_t n = 0;
    for (int64_t pa = A.pos[i]; pa < A.pos[i + 1]; ++pa) {
      const int64_t k = A.crd[pa];
      for (int64_t pb = B.pos[k], pe = B.pos[k + 1]; pb < pe; ++pb) {
        uint32_t& m = mk[B.crd[pb]];
        n += m != st && m != blocked;
        m = m == blocked ? blocked : st;
      }
    }
    return n;
  }
};

// Wide products (no dense workspace of B's columns): each product's column is looked up in the
// (sorted) mask row, and the others go through the hash accumulator's table.
template <class S, class I, class V> struct ComplementHashAcc {
  static constexpr bool kDropsProducts = true;
  CsView<I, uint8_t> M;
  HashAcc<S, I, V> hash;

  static bool blocked(const I* mrow, int64_t len, I j) {
    const I* at = std::lower_bound(mrow, mrow + len, j);
    return at != mrow + len && *at == j;
  }
  template <class Keep> int64_t each_column(const CsView<I, V>& A, const CsView<I, V>& B, int64_t i,
                                            HashScratch<I, V>& ws, I* __restrict oc, I& lo, I& hi,
                                            uint64_t& cap_out, Keep&& keep) const {
    const auto tb = hash.table(A, B, A.pos[i], A.pos[i + 1]);
    cap_out = tb.cap;
    if (tb.cap == 0) return 0;
    const uint64_t mask = tb.cap - 1;
    I* __restrict keys = ws.ensure(tb.cap);
    const I* mrow = M.crd + M.pos[i];
    const int64_t mlen = M.pos[i + 1] - M.pos[i];
    int64_t n = 0;
    for (int64_t pa = A.pos[i]; pa < A.pos[i + 1]; ++pa) {
      const int64_t k = A.crd[pa];
      for (int64_t pb = B.pos[k], pe = B.pos[k + 1]; pb < pe; ++pb) {
        const I j = B.crd[pb];
        if (mlen && blocked(mrow, mlen, j)) continue;
        uint64_t h = hash_slot(j, tb.shift);
        while (keys[h] != j && keys[h] != I(-1)) h = (h + 1) & mask;
        const bool fresh = keys[h] == I(-1);
        if (fresh) {
          keys[h] = j;
          oc[n++] = j;
          lo = std::min(lo, j);
          hi = std::max(hi, j);
        }
        keep(fresh, h, pa, pb);
      }
    }
    return n;
  }
  int64_t row(const CsView<I, V>& A, const CsView<I, V>& B, int64_t i, I* __restrict oc, V* __restrict ov,
              HashScratch<I, V>& ws) const {
    I lo = std::numeric_limits<I>::max(), hi = 0;
    uint64_t cap = 0;
    const int64_t n = each_column(A, B, i, ws, oc, lo, hi, cap, [&](bool fresh, uint64_t h, int64_t pa, int64_t pb) {
      const V p = S::mul(A.val[pa], B.val[pb]);
      ws.vals[h] = fresh ? p : S::add(ws.vals[h], p);
    });
    if (cap == 0) return 0;
    const uint64_t mask = cap - 1;
    const int shift = 64 - std::countr_zero(cap);
    I* keys = ws.keys.data();
    order_row(oc, n, lo, hi, nullptr, [&](int64_t t, I j) {
      uint64_t h = hash_slot(j, shift);
      while (keys[h] != j) h = (h + 1) & mask;
      ov[t] = ws.vals[h];
    });
    std::fill_n(keys, cap, I(-1));
    return n;
  }
  int64_t count(const CsView<I, V>& A, const CsView<I, V>& B, int64_t i, HashScratch<I, V>& ws) const {
    thread_local std::vector<I> cols_tls;
    std::vector<I>& list = tls_pinned(cols_tls);
    int64_t f = 0;
    for (int64_t pa = A.pos[i]; pa < A.pos[i + 1]; ++pa) f += B.pos[A.crd[pa] + 1] - B.pos[A.crd[pa]];
    if (list.size() < static_cast<size_t>(f)) list.resize(static_cast<size_t>(f));
    I lo = std::numeric_limits<I>::max(), hi = 0;
    uint64_t cap = 0;
    const int64_t n = each_column(A, B, i, ws, list.data(), lo, hi, cap, [](bool, uint64_t, int64_t, int64_t) {});
    if (cap) std::fill_n(ws.keys.data(), cap, I(-1));
    return n;
  }
};

template <class S, class I, class V>
Tensor masked_complement_typed(const CsView<I, uint8_t>& M, const CsView<I, V>& A, const CsView<I, V>& B,
                               const Allocator& alloc, ValueType vt, Workers& w) {
  absl::Cleanup trim = [] {
    dense_scratch<V>().trim();
    hash_scratch<I, V>().trim();
  };
  int64_t flops = -1;
  const bool parallel = product_parallel(A, B, w, flops);
  if (product_is_wide(A, B, alloc)) {
    const ComplementHashAcc<S, I, V> acc{M, HashAcc<S, I, V>{B.inner, nullptr}};
    if (!parallel) return sparse_product<S>(A, B, acc, hash_scratch<I, V>(), alloc, vt, flops);
    return sparse_product_parallel<S>(A, B, [&] { return std::make_pair(acc, &hash_scratch<I, V>()); }, alloc, vt, w);
  }
  absl::Cleanup trim_bits = [] { bitmap_scratch().trim(); };
  auto make = [&] {
    auto& ws = dense_scratch<V>();
    ws.ensure(B.inner);
    return std::make_pair(ComplementDenseAcc<S, I, V>{M, ws.marks.data(), ws.vals.data(),
                                                      bitmap_scratch().ensure(B.inner)}, &ws);
  };
  if (!parallel) {
    auto [acc, ws] = make();
    return sparse_product<S>(A, B, acc, *ws, alloc, vt, flops);
  }
  return sparse_product_parallel<S>(A, B, make, alloc, vt, w);
}

// Both masked products write at most M's row length per row: pieces bounded by M.pos.
template <class S, class I, class V>
Tensor masked_saxpy_typed(const Tensor& Mt, const Tensor& At, const Tensor& Bt, bool complement, const Allocator& alloc,
                          Workers& w) {
  const auto M = mask_view<I>(Mt);
  const auto A = cs_view<I, V>(At);
  const auto B = cs_view<I, V>(Bt);
  if (complement) return masked_complement_typed<S>(M, A, B, alloc, At.value_type, w);
  const int64_t rows = A.outer, cols = B.inner;
  // The per-row work (a lookup in B per entry of A) is summed only where a bound on its total
  // leaves room for two chunks: at 2 threads that pass alone made a small product up to 1.28x
  // its 1-thread time (494_bus A<A> = A*A 1.22x, alternated in one process).
  const bool too_little = w.threads > 1 && !worth_parallel(w, rows + M.nnz() + multiply_bound(A, B));
  const Partition part =
      too_little ? partition_by_prefix(nullptr, rows, w, w.basis)
                 : partition_rows(rows, w, "multiplies per row plus mask row", [&](int64_t i) {
                     if (M.pos[i] == M.pos[i + 1]) return int64_t(0);
                     int64_t f = M.pos[i + 1] - M.pos[i];
                     for (int64_t pa = A.pos[i]; pa < A.pos[i + 1]; ++pa) f += B.pos[A.crd[pa] + 1] - B.pos[A.crd[pa]];
                     return f;
                   });
  // Wide products (see spgemm_gustavson.hpp) find each product's column in the mask row by
  // binary search instead of marking a dense array of all columns.
  bool wide = false;
  if (dense_workspace_bytes(cols, sizeof(V)) > static_cast<size_t>(kDenseWorkspaceFloor) ||
      alloc.over_cap(dense_workspace_bytes(cols, sizeof(V)))) {
    double work = static_cast<double>(M.nnz());
    for (int64_t i = 0; i < rows; ++i)
      if (M.pos[i] != M.pos[i + 1])
        for (int64_t pa = A.pos[i]; pa < A.pos[i + 1]; ++pa) work += static_cast<double>(B.pos[A.crd[pa] + 1] - B.pos[A.crd[pa]]);
    wide = dense_workspace_too_wide(cols, sizeof(V), work, alloc.memory_cap());
  }
  Tensor C = assemble_by_pieces<I, V>(w, part, rows, cols, M.pos, 0, alloc, At.value_type, false,
                                      [&](int64_t r0, int64_t r1, I* __restrict crd, V* __restrict val, int64_t* ends) {
  if (wide) return masked_saxpy_search_rows<S>(M, A, B, r0, r1, crd, val, ends);
  auto& ws = dense_scratch<V>();
  ws.ensure(cols);
  uint32_t* __restrict mk = ws.marks.data();
  V* __restrict acc = ws.vals.data();
  int64_t nz = 0;
  for (int64_t i = r0; i < r1; ++i) {
    const int64_t m0 = M.pos[i], m1 = M.pos[i + 1], a0 = A.pos[i], a1 = A.pos[i + 1];
    if (m0 != m1 && a0 != a1) {
      const uint32_t allowed = ws.next(2), seen = allowed + 1;
      for (int64_t pm = m0; pm < m1; ++pm) mk[M.crd[pm]] = allowed;
      for (int64_t pa = a0; pa < a1; ++pa) {
        const V a = A.val[pa];
        const int64_t k = A.crd[pa];
        for (int64_t pb = B.pos[k], pe = B.pos[k + 1]; pb < pe; ++pb) {
          const I j = B.crd[pb];
          if (mk[j] == allowed) {
            mk[j] = seen;
            acc[j] = S::mul(a, B.val[pb]);
          } else if (mk[j] == seen) {
            acc[j] = S::add(acc[j], S::mul(a, B.val[pb]));
          }
        }
      }
      for (int64_t pm = m0; pm < m1; ++pm) {
        const I j = M.crd[pm];
        if (mk[j] == seen) {
          crd[nz] = j;
          val[nz++] = acc[j];
        }
      }
    }
    ends[i] = nz;
  }
  return nz;
  });
  dense_scratch<V>().trim();
  return C;
}

template <class S, class I, class V>
Tensor masked_dot_typed(const Tensor& Mt, const Tensor& At, const Tensor& Bt, const Allocator& alloc, Workers& w) {
  const auto M = mask_view<I>(Mt);
  const auto A = cs_view<I, V>(At);
  const auto B = cs_view<I, V>(Bt);  // CSC: outer = columns of B
  const int64_t rows = A.outer, cols = B.outer;
  const int64_t bmean = cols > 0 ? B.nnz() / cols : 0;
  const Partition part = partition_rows(rows, w, "mask row x (A row + mean B column)", [&](int64_t i) {
    return (M.pos[i + 1] - M.pos[i]) * (A.pos[i + 1] - A.pos[i] + bmean + 1);
  });
  return assemble_by_pieces<I, V>(w, part, rows, cols, M.pos, 0, alloc, At.value_type, false,
                                  [&](int64_t r0, int64_t r1, I* __restrict crd, V* __restrict val, int64_t* ends) {
  int64_t nz = 0;
  for (int64_t i = r0; i < r1; ++i) {
    const int64_t a0 = A.pos[i], a1 = A.pos[i + 1];
    if (a0 != a1) {
      const I afirst = A.crd[a0], alast = A.crd[a1 - 1];
      for (int64_t pm = M.pos[i], me = M.pos[i + 1]; pm < me; ++pm) {
        const I j = M.crd[pm];
        int64_t q = B.pos[j];
        const int64_t qe = B.pos[j + 1];
        if (q == qe || B.crd[q] > alast || B.crd[qe - 1] < afirst) continue;
        int64_t p = a0;
        // First product.
        bool found = false;
        V acc{};
        while (p < a1 && q < qe) {
          const I ka = A.crd[p], kb = B.crd[q];
          if (ka == kb) {
            acc = S::mul(A.val[p++], B.val[q++]);
            found = true;
            break;
          }
          p += ka < kb;
          q += kb < ka;
        }
        if (!found) continue;
        while (p < a1 && q < qe) {
          const I ka = A.crd[p], kb = B.crd[q];
          if (ka == kb) {
            acc = S::add(acc, S::mul(A.val[p++], B.val[q++]));
          } else {
            p += ka < kb;
            q += kb < ka;
          }
        }
        crd[nz] = j;
        val[nz++] = acc;
      }
    }
    ends[i] = nz;
  }
  return nz;
  });
}

template <class F> decltype(auto) with_kernel_types(const Tensor& t, sj_semiring s, F&& f) {
  return with_types(t.index_type, t.value_type, [&](auto i, auto v) {
    using V = decltype(v);
    if constexpr (std::is_same_v<V, uint8_t>) {
      return f(OrAnd<V>{}, i, v);  // bool values serve only or-and (check_request refuses the rest)
    } else {
      return with_semiring<V>(s, [&](auto sr) { return f(sr, i, v); });
    }
  });
}

