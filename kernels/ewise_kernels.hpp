// Element-wise kernels on CSR operands, same exactness as kernels/reference_ewise.hpp
// (A is always the left operand: mul(a, b), add(a, b)).
//
//   mult_rows / merge_add    row-wise merge of A and B (B may be the prepared B^T: the
//                            `transpose` schedule); mult_rows is the row loop of
//                            kernels/coiter_drivers.cpp's coiter_ewise_mult; a row pair whose
//                            lengths are skewed (>= 16x) gallops the long side instead.
//   search_mult_t            C(i,j) = A(i,j) * B(j,i) with the ORIGINAL B in CSR: each
//                            A(i,j) looks for column i in B's row j (the SparseConflicts
//                            `forsame` follower), by binary search, or by galloping from a
//                            per-row finger (rows of B are visited with increasing i, so
//                            each finger only moves forward).
//
// Threads: rows are split by nnz(A row) + nnz(B row) (src/work_partition.hpp); each chunk
// writes its rows into its own piece and the pieces are joined in row order
// (kernels/sparse_assembly.hpp), so results do not depend on the thread count.
//
// Output assembly without reallocation: the result arrays are allocated once at an upper
// bound (min(nnz A, nnz B) for mult on one thread, the sum over rows of min(len A, len B) per
// chunk on several, nnz(A) for search, nnz A + nnz B for add) and filled contiguously row
// after row; when the result is under half the bound its coordinates and values are copied
// once to exact size so the caller does not hold the slack.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/intersect_avx512.hpp"
#include "kernels/sparse_assembly.hpp"
#include "kernels/spmspv_kernels.hpp"  // gallop
#include "src/error.hpp"
#include "src/tensor.hpp"

namespace sj::ewise {

using spmspv::gallop;

inline void require_same(int64_t ao, int64_t ai, int64_t bo, int64_t bi, const char* op) {
  if (ao != bo || ai != bi) fail(SJ_ERR_SHAPE_MISMATCH, op, ": operands are ", ao, "x", ai, " and ", bo, "x", bi);
}

// Rows with the same coordinates (B o A^T for a structurally symmetric A, two operands of
// one pattern): their intersection is either row, so the values are multiplied pairwise with
// no merge. The test stops at the first difference, so rows that differ cost little; the
// first and last coordinates are compared inline before a long pair's memcmp, a library call
// that was a third of a 600k-row A .* B of two uniform matrices (16 a row: 10.2 ms, 6.7
// without the call).
template <class I> inline bool same_coordinates(const I* a, const I* b, int64_t n) {
  if (n == 0) return true;
  if (a[0] != b[0] || a[n - 1] != b[n - 1]) return false;
  if (n >= 16) return std::memcmp(a, b, sizeof(I) * static_cast<size_t>(n)) == 0;
  for (int64_t k = 0; k < n; ++k)
    if (a[k] != b[k]) return false;
  return true;
}
template <class S, class I, class V>
inline int64_t multiply_same(const I* c, const V* av, const V* bv, int64_t n, I* oc, V* ov) {
  for (int64_t k = 0; k < n; ++k) {
    oc[k] = c[k];
    ov[k] = S::mul(av[k], bv[k]);
  }
  return n;
}

// A row pair whose lengths are skewed (>= 16x): each entry of the short side gallops the long.
template <class S, class I, class V>
[[gnu::noinline]] int64_t merge_row_mult_skewed(const I* ac, const V* av, int64_t pa, int64_t ea, const I* bc,
                                                const V* bv, int64_t pb, int64_t eb, I* oc, V* ov, int64_t q) {
  if (ea - pa < eb - pb) {
    for (; pa < ea && pb < eb; ++pa) {
      pb = gallop(bc, pb, eb, ac[pa]);
      if (pb < eb && bc[pb] == ac[pa]) {
        oc[q] = ac[pa];
        ov[q++] = S::mul(av[pa], bv[pb++]);
      }
    }
    return q;
  }
  for (; pa < ea && pb < eb; ++pb) {
    pa = gallop(ac, pa, ea, bc[pb]);
    if (pa < ea && ac[pa] == bc[pb]) {
      oc[q] = bc[pb];
      ov[q++] = S::mul(av[pa++], bv[pb]);
    }
  }
  return q;
}

// Segments up to this long take the AVX-512 block intersection (kernels/intersect_avx512.hpp)
// from merge_row_mult's inline part, without the general tests; longer ones take the tests
// first (where they are cheap next to the merge), then the blocks.
constexpr int64_t kInlineBlocksMax = 64;

// Intersection of two sorted, non-empty segments, appended at out (returns the new end), past
// merge_row_mult's inline cases: equal rows and skewed pairs leave early; int32 segments
// take the AVX-512 blocks; else the merge is branch-free (each step writes at q and keeps it
// only on a match: q stays below min(la, lb), within the row's bound), so mixed match
// patterns cost no mispredictions.
template <class S, class I, class V>
[[gnu::noinline]] int64_t merge_row_mult_general(const I* ac, const V* av, int64_t pa, int64_t ea, const I* bc,
                                                 const V* bv, int64_t pb, int64_t eb, I* oc, V* ov, int64_t q) {
  const int64_t la = ea - pa, lb = eb - pb;
  if (la == lb && same_coordinates(ac + pa, bc + pb, la))
    return q + multiply_same<S>(ac + pa, av + pa, bv + pb, la, oc + q, ov + q);
  if (ac[ea - 1] < bc[pb] || bc[eb - 1] < ac[pa]) return q;
  if (la * 16 < lb || lb * 16 < la) return merge_row_mult_skewed<S>(ac, av, pa, ea, bc, bv, pb, eb, oc, ov, q);
  if constexpr (std::is_same_v<I, int32_t>) {
    if (intersect_avx512::available())
      return q + intersect_avx512::mult_best<S>(ac + pa, av + pa, la, bc + pb, bv + pb, lb, oc + q, ov + q);
  }
  while (pa < ea && pb < eb) {
    const I a = ac[pa], b = bc[pb];
    oc[q] = a;
    ov[q] = S::mul(av[pa], bv[pb]);
    q += a == b;
    pa += a <= b;
    pb += b <= a;
  }
  return q;
}

// Intersection of two sorted segments (merge_row_mult_general), inlined into the row loops
// for its common cases. Pairs of one entry each are a compare: through the general function
// B o A^T of the diagonal bcsstm25 took 0.099 ms, 2.7x the search schedule, and 0.039 ms so.
// int32 segments up to kInlineBlocksMax go to the AVX-512 blocks, whose compares find
// disjoint ranges and skew well enough at these lengths, and need no scalar merge for short
// ones; rows with the same coordinates first (B o A^T on a symmetric pattern), which the blocks
// would emit a match at a time: over the 52 real matrices of bench_compare_spmspv_ewise, B o A^T
// against the hand-written transpose-then-merge went from 1.09-1.14x to 1.43x (0.95x with the
// blocks alone). The general tests, the call of a function too large to inline (eleven
// arguments) and the scalar merge under 12 coordinates cost most of the time of rows of
// varying length. Two 600k x 600k uniform matrices, Poisson row lengths, one thread, medians
// of 11 alternated (all through the general function / so): 6 a row 17.2 / 8.6 ms, 3 a row
// 17.5 / 14.9, 16 a row 17.3 / 15.4, 40 a row 26.3 / 22.7. (On rows of exactly 16, 10.1 /
// 7.3: there the scalar merge's exits predict well, as in the measure that had set the
// blocks' minimum at 12 coordinates a pair.)
template <class S, class I, class V>
inline int64_t merge_row_mult(const I* ac, const V* av, int64_t pa, int64_t ea, const I* bc, const V* bv, int64_t pb,
                              int64_t eb, I* oc, V* ov, int64_t q) {
  const int64_t la = ea - pa, lb = eb - pb;
  if (la == 0 || lb == 0) return q;
  if (la == 1 && lb == 1) {  // kept only on a match (q is within the row's bound)
    oc[q] = ac[pa];
    ov[q] = S::mul(av[pa], bv[pb]);
    return q + (ac[pa] == bc[pb]);
  }
  if constexpr (std::is_same_v<I, int32_t>) {
    if (la <= kInlineBlocksMax && lb <= kInlineBlocksMax && intersect_avx512::available()) {
      if (la == lb && same_coordinates(ac + pa, bc + pb, la))
        return q + multiply_same<S>(ac + pa, av + pa, bv + pb, la, oc + q, ov + q);
      return q + intersect_avx512::mult_best<S>(ac + pa, av + pa, la, bc + pb, bv + pb, lb, oc + q, ov + q);
    }
  }
  return merge_row_mult_general<S>(ac, av, pa, ea, bc, bv, pb, eb, oc, ov, q);
}

// How the element-wise product's row loop (mult_rows) routes a pair whose shorter side has at
// least long_min coordinates: ByLength sends every such pair to long_pair (the generated
// kernels; a forced kernel, or a CPU without AVX-512); with int32 coordinates on AVX-512 only
// pairs with a side over kInlineBlocksMax are "long", and LongToGenerated / LongToBlocks send
// them to long_pair or to the blocks (long_pair_route decides, once per call).
enum class LongRoute { ByLength, LongToGenerated, LongToBlocks };

// The element-wise product's row loop: rows [r0, r1) of A .* B appended from 0 at oc/ov,
// ends[i] the end of row i; returns the total. long_pair(a0, a1, b0, b1, q) -> the new q
// takes the long pairs (LongRoute); the rest take merge_row_mult's cases.
// With int32 coordinates on AVX-512 the loop itself is compiled for that target, so that the
// blocks inline into it (no call, no spills of the block's state at every row), and its
// tests are ordered so that each is one branch that random row lengths predict: empty or long
// sides by one unsigned compare each, then single entries, then equal rows by their length,
// first and last coordinates at once. Two 600k x 600k uniform matrices, Poisson row lengths
// (16 a row), one thread (`bench_parallel --only "ewise A.*B"`): 15.6-16.1 ms through
// merge_row_mult, 12.6-12.7 so; the index notation's generated nest 10.7-11.7. Pairs of 24-64
// a side, which went to the generated kernels' 4- and 8-wide tiers, are faster in the blocks
// (Poisson 40 a row: 83-87 ms so, 24-26 now).
template <bool kVp2, class S, class V, class LongPair>
[[gnu::target("avx512f,avx512vp2intersect")]] int64_t mult_rows_avx512(const CsView<int32_t, V>& A,
                                                                      const CsView<int32_t, V>& B, int64_t r0,
                                                                      int64_t r1, int32_t* oc, V* ov, int64_t* ends,
                                                                      int64_t long_min, bool long_generated,
                                                                      LongPair& long_pair) {
  // Locals, not the views' fields: the stores to oc/ov/ends would otherwise reload them.
  const int64_t *ap = A.pos, *bp = B.pos;
  const int32_t *ac = A.crd, *bc = B.crd;
  const V *av = A.val, *bv = B.val;
  constexpr auto kMax = static_cast<uint64_t>(kInlineBlocksMax);
  int64_t q = 0;
  for (int64_t s = r0; s < r1; ++s) {
    const int64_t a0 = ap[s], a1 = ap[s + 1], b0 = bp[s], b1 = bp[s + 1];
    const int64_t la = a1 - a0, lb = b1 - b0;
    if (static_cast<uint64_t>(la - 1) >= kMax || static_cast<uint64_t>(lb - 1) >= kMax) {  // empty or long
      if (la != 0 && lb != 0)
        q = long_generated && std::min(la, lb) >= long_min
                ? long_pair(a0, a1, b0, b1, q)
                : merge_row_mult_general<S>(ac, av, a0, a1, bc, bv, b0, b1, oc, ov, q);
    } else if ((la | lb) == 1) {  // one entry each: kept only on a match (q is within the bound)
      oc[q] = ac[a0];
      ov[q] = S::mul(av[a0], bv[b0]);
      q += ac[a0] == bc[b0];
    } else if (((la ^ lb) | static_cast<int64_t>(ac[a0] ^ bc[b0]) | static_cast<int64_t>(ac[a1 - 1] ^ bc[b1 - 1])) ==
                   0 &&
               same_coordinates(ac + a0, bc + b0, la)) {
      q += multiply_same<S>(ac + a0, av + a0, bv + b0, la, oc + q, ov + q);
    } else {
      q += intersect_avx512::block_mult_inline<kVp2, S>(ac + a0, av + a0, la, bc + b0, bv + b0, lb, oc + q, ov + q);
    }
    ends[s] = q;
  }
  return q;
}

template <class S, class I, class V, class LongPair>
int64_t mult_rows(const CsView<I, V>& A, const CsView<I, V>& B, int64_t r0, int64_t r1, I* oc, V* ov, int64_t* ends,
                  int64_t long_min, LongRoute route, LongPair&& long_pair) {
  if constexpr (std::is_same_v<I, int32_t>) {
    if (route != LongRoute::ByLength && intersect_avx512::available()) {
      const bool gen = route == LongRoute::LongToGenerated;
      return intersect_avx512::has_vp2intersect()
                 ? mult_rows_avx512<true, S>(A, B, r0, r1, oc, ov, ends, long_min, gen, long_pair)
                 : mult_rows_avx512<false, S>(A, B, r0, r1, oc, ov, ends, long_min, gen, long_pair);
    }
  }
  const int64_t *ap = A.pos, *bp = B.pos;
  const I *ac = A.crd, *bc = B.crd;
  const V *av = A.val, *bv = B.val;
  int64_t q = 0;
  for (int64_t s = r0; s < r1; ++s) {
    const int64_t a0 = ap[s], a1 = ap[s + 1], b0 = bp[s], b1 = bp[s + 1];
    q = std::min(a1 - a0, b1 - b0) < long_min ? merge_row_mult<S>(ac, av, a0, a1, bc, bv, b0, b1, oc, ov, q)
                                              : long_pair(a0, a1, b0, b1, q);
    ends[s] = q;
  }
  return q;
}

// The route of long pairs for one call, from a sample of its rows (kRouteSampleRuns runs of
// kRouteSampleRun rows spread evenly, not overlapping; each long pair counted over a prefix of
// at most kRouteSamplePrefix coordinates of A's side, against B's coordinates up to the last
// of them; the sample stops after kRouteSamplePairs long pairs or an eighth of the operands'
// entries): the generated kernels emit a block's matches without a branch (compress
// stores), the blocks one match at a time, whose branches mispredict once matches are not
// rare; without matches the blocks' compares are the cheaper. 600k rows, Poisson lengths,
// one thread (throwaway probe, ms, blocks / generated): random coordinates 70 a row 45 / 89,
// 120 a row 64 / 104-135; 120 a row with 2% of the shorter side shared 240-300 / 197-203, with
// 10% 193-195 / 145-169 (1%: equal). So the generated kernels take long pairs when at least 1
// in kLongMatchShare of the sampled coordinates match. Decided once per call, not as a chunk
// goes: the generated kernels and the compiled products may keep different NaN payloads of a
// NaN * NaN, so a route that depended on where chunks start would make results depend on the
// thread count (a row's payload may depend on the other rows of its call, not on threads).
// `sample`: kernels::ewise_samples_long_pairs (the automatic tiers on AVX-512; a forced kernel
// or ISA routes by length).
constexpr int64_t kLongMatchShare = 256;
constexpr int64_t kRouteSampleRuns = 16, kRouteSampleRun = 64, kRouteSamplePairs = 32, kRouteSamplePrefix = 512;
template <class I, class V>
LongRoute long_pair_route(const CsView<I, V>& A, const CsView<I, V>& B, int64_t long_min, bool sample) {
  if constexpr (std::is_same_v<I, int32_t>) {
    if (!sample || !intersect_avx512::available()) return LongRoute::ByLength;
    if (long_min == std::numeric_limits<int64_t>::max()) return LongRoute::LongToBlocks;  // no kernel to send to
    const int64_t rows = A.outer;
    const int64_t budget = (A.nnz() + B.nnz()) / 8;
    const bool vp2 = intersect_avx512::has_vp2intersect();
    int64_t matched = 0, scanned = 0, pairs = 0, r1 = 0;
    for (int64_t k = 0; k < kRouteSampleRuns && pairs < kRouteSamplePairs && scanned < budget; ++k) {
      int64_t s = std::max(r1, rows * k / kRouteSampleRuns);
      r1 = std::min(rows, s + kRouteSampleRun);
      for (; s < r1 && pairs < kRouteSamplePairs && scanned < budget; ++s) {
        const int64_t a0 = A.pos[s], la = A.pos[s + 1] - a0, b0 = B.pos[s], lb = B.pos[s + 1] - b0;
        if (std::min(la, lb) < long_min || std::max(la, lb) <= kInlineBlocksMax) continue;
        const int64_t na = std::min(la, kRouteSamplePrefix);
        const I* bend = std::upper_bound(B.crd + b0, B.crd + b0 + lb, A.crd[a0 + na - 1]);
        const int64_t nb = std::min<int64_t>(bend - (B.crd + b0), kRouteSamplePrefix);
        matched += vp2 ? intersect_avx512::block_count<true>(A.crd + a0, na, B.crd + b0, nb)
                       : intersect_avx512::block_count<false>(A.crd + a0, na, B.crd + b0, nb);
        scanned += std::max<int64_t>(1, std::min(na, nb));
        ++pairs;
      }
    }
    return scanned > 0 && matched * kLongMatchShare >= scanned ? LongRoute::LongToGenerated
                                                                : LongRoute::LongToBlocks;
  } else {
    (void)A, (void)B, (void)long_min, (void)sample;
    return LongRoute::ByLength;
  }
}

// Union of two sorted segments, appended at out (returns the new end). Branch-free: each step
// writes the smaller coordinate (both sides' sum when equal) and advances the side(s) it took,
// so interleaved coordinates cost no mispredictions. The two-way branch it replaces
// mispredicted about once per entry on uniform rows (600k x 600k, 16 a row each: 4.4 ns an
// output entry at one thread). A floating-point sum is formed at every step and kept only on
// a match; an integer one only on a match (a sum of unmatched values could overflow).
template <class S, class I, class V>
inline int64_t merge_row_add(const I* ac, const V* av, int64_t pa, int64_t ea, const I* bc, const V* bv, int64_t pb,
                             int64_t eb, I* oc, V* ov, int64_t q) {
  while (pa < ea && pb < eb) {
    const I a = ac[pa], b = bc[pb];
    const bool ta = a <= b, tb = b <= a;
    if constexpr (std::is_floating_point_v<V>) {
      // The value is picked by an index into the three candidates: g++ turns a select of two
      // doubles, of their bits or of their addresses back into branches.
      const V cand[3] = {av[pa], bv[pb], S::add(av[pa], bv[pb])};
      ov[q] = cand[int(tb) + int(ta && tb)];
    } else {
      V v = ta ? av[pa] : bv[pb];
      if (ta && tb) v = S::add(av[pa], bv[pb]);
      ov[q] = v;
    }
    oc[q++] = ta ? a : b;
    pa += ta;
    pb += tb;
  }
  if (pa < ea) {
    std::memcpy(oc + q, ac + pa, sizeof(I) * static_cast<size_t>(ea - pa));
    std::memcpy(ov + q, av + pa, sizeof(V) * static_cast<size_t>(ea - pa));
    q += ea - pa;
  } else if (pb < eb) {
    std::memcpy(oc + q, bc + pb, sizeof(I) * static_cast<size_t>(eb - pb));
    std::memcpy(ov + q, bv + pb, sizeof(V) * static_cast<size_t>(eb - pb));
    q += eb - pb;
  }
  return q;
}

// The assembly of a row-by-row element-wise result (kernels/sparse_assembly.hpp).
// per_row(la, lb) bounds a row's output. A serial call sizes the result by the total bound
// alone; a parallel one (worth_parallel) splits rows by merge work, nnz of both rows + 1,
// read from A's and B's positions, and the threads sum their chunks' bounds. No per-row
// arrays and no pass over all rows on one thread: building the work and bound prefixes took
// ~0.8 ms of a 6.9 ms 2-thread A .* B of 600k rows, a floor for any thread count.
template <class I, class V, class Bound, class Fill>
Tensor assemble_rows(const CsView<I, V>& A, const CsView<I, V>& B, Workers& w, const Allocator& alloc, ValueType vt,
                     Bound&& per_row, Fill&& fill) {
  const int64_t rows = A.outer;
  constexpr const char* kBasis = "nnz of A's and B's rows";
  auto bound_of = [&](int64_t r0, int64_t r1) {
    int64_t s = 0;
    for (int64_t i = r0; i < r1; ++i) s += per_row(A.pos[i + 1] - A.pos[i], B.pos[i + 1] - B.pos[i]);
    return s;
  };
  auto work_at = [&](int64_t i) { return (A.pos[i] - A.pos[0]) + (B.pos[i] - B.pos[0]) + i; };
  if (rows <= 1 || !worth_parallel(w, work_at(rows))) {
    if (w.threads <= 1) w.basis = kBasis;
    // per_row of the totals (min or +: superadditive) bounds the sum over rows without a pass
    // over them, ~4% of a 600k-row A .* B. It can be far looser (A's entries in the top rows,
    // B's in the bottom ones): over the memory cap the exact sum decides, as at two threads.
    int64_t bound = per_row(A.pos[rows] - A.pos[0], B.pos[rows] - B.pos[0]);
    if (alloc.over_cap(estimate_bytes(bound, sizeof(I) + sizeof(V), sizeof(int64_t) * static_cast<size_t>(rows + 1))))
      bound = bound_of(0, rows);
    return assemble_serial<I, V>(rows, A.inner, bound, 0, alloc, vt, true, std::forward<Fill>(fill));
  }
  const Partition part = partition_by(rows, w, kBasis, work_at);
  const int64_t k = part.chunks();
  absl::InlinedVector<int64_t, 33> chunk_bound(static_cast<size_t>(k) + 1, 0);
  w.run_indexed(part, [&](int64_t c, int64_t b, int64_t e) { chunk_bound[static_cast<size_t>(c) + 1] = bound_of(b, e); });
  for (size_t c = 0; c < static_cast<size_t>(k); ++c) chunk_bound[c + 1] += chunk_bound[c];
  return assemble_by_chunk_bounds<I, V>(w, part, rows, A.inner, chunk_bound.data(), 0, alloc, vt, true,
                                        std::forward<Fill>(fill));
}

// Row i of the result is row_merge(A's row i, B's row i) appended at q: the two-finger kernels.
template <class I, class V, class Bound, class RowMerge>
Tensor merge_rows(const Allocator& alloc, const CsView<I, V>& A, const CsView<I, V>& B, ValueType vt, Workers& w,
                  Bound&& per_row, RowMerge&& row_merge) {
  return assemble_rows<I, V>(A, B, w, alloc, vt, std::forward<Bound>(per_row),
                             [&](int64_t r0, int64_t r1, I* oc, V* ov, int64_t* ends) {
                               int64_t q = 0;
                               for (int64_t i = r0; i < r1; ++i) {
                                 q = row_merge(A.pos[i], A.pos[i + 1], B.pos[i], B.pos[i + 1], oc, ov, q);
                                 ends[i] = q;
                               }
                               return q;
                             });
}

template <class S, class I, class V>
Tensor merge_add(const Allocator& alloc, const CsView<I, V>& A, const CsView<I, V>& B, ValueType vt, Workers& w) {
  require_same(A.outer, A.inner, B.outer, B.inner, "ewise_add");
  return merge_rows<I, V>(alloc, A, B, vt, w, [](int64_t la, int64_t lb) { return la + lb; },
                          [&](int64_t pa, int64_t ea, int64_t pb, int64_t eb, I* oc, V* ov, int64_t q) {
                            return merge_row_add<S>(A.crd, A.val, pa, ea, B.crd, B.val, pb, eb, oc, ov, q);
                          });
}

// Per-row fingers into B's rows for one chunk of search_mult_t: started lazily at the row's
// start (a stamp per row says whether this chunk has set it), so a chunk costs its own work,
// not O(rows of B). The running thread's, reused across chunks and calls.
struct FingerScratch {
  std::vector<int64_t> finger;
  std::vector<uint32_t> stamp;
  uint32_t current = 0;
  uint32_t next(int64_t n) {
    if (static_cast<int64_t>(stamp.size()) < n) {
      finger.resize(static_cast<size_t>(n));
      stamp.resize(static_cast<size_t>(n), 0);
    }
    if (++current == 0) {
      std::fill(stamp.begin(), stamp.end(), 0u);
      current = 1;
    }
    return current;
  }
  static FingerScratch& get() {
    thread_local FingerScratch s;
    return s;
  }
};

// C(i,j) = mul(A(i,j), B(j,i)), B the original (untransposed) operand in CSR: B is
// A.inner x A.outer. `gallop_fingers`: search forward from a per-row finger, else binary
// search over the whole row.
template <class S, class I, class V>
Tensor search_mult_t(const Allocator& alloc, const CsView<I, V>& A, const CsView<I, V>& B, ValueType vt,
                     bool gallop_fingers, Workers& w) {
  require_same(A.outer, A.inner, B.inner, B.outer, "ewise_mult (B transposed)");
  const int64_t* bp = B.pos;
  const I* bc = B.crd;
  const V* bv = B.val;
  // A's nnz is both the work (one search per entry) and the output bound.
  const Partition part = partition_by_prefix(A.pos, A.outer, w, "A's nnz per row");
  return assemble_by_pieces<I, V>(w, part, A.outer, A.inner, A.pos, 0, alloc, vt, true,
                                  [&](int64_t r0, int64_t r1, I* oc, V* ov, int64_t* ends) {
  int64_t q = 0;
  if (gallop_fingers) {
    FingerScratch& fs = FingerScratch::get();
    const uint32_t st = fs.next(B.outer);  // B.outer = A.inner
    int64_t* finger = fs.finger.data();
    uint32_t* stamp = fs.stamp.data();
    for (int64_t i = r0; i < r1; ++i) {
      const I key = static_cast<I>(i);
      for (int64_t p = A.pos[i], e = A.pos[i + 1]; p < e; ++p) {
        const I j = A.crd[p];
        const int64_t end = bp[j + 1];
        if (stamp[j] != st) {
          stamp[j] = st;
          finger[j] = bp[j];
        }
        int64_t f = gallop(bc, finger[j], end, key);
        if (f < end && bc[f] == key) {
          oc[q] = j;
          ov[q++] = S::mul(A.val[p], bv[f]);
          ++f;
        }
        finger[j] = f;
      }
      ends[i] = q;
    }
  } else {
    for (int64_t i = r0; i < r1; ++i) {
      const I key = static_cast<I>(i);
      for (int64_t p = A.pos[i], e = A.pos[i + 1]; p < e; ++p) {
        const I j = A.crd[p];
        const I* lo = bc + bp[j];
        const I* hi = bc + bp[j + 1];
        if (lo == hi || hi[-1] < key || *lo > key) continue;
        // branch-free binary search
        int64_t n = hi - lo;
        while (n > 1) {
          const int64_t half = n >> 1;
          lo = lo[half - 1] < key ? lo + half : lo;
          n -= half;
        }
        if (*lo < key) ++lo;
        if (*lo == key) {
          oc[q] = j;
          ov[q++] = S::mul(A.val[p], bv[lo - bc]);
        }
      }
      ends[i] = q;
    }
  }
  return q;
  });
}

}  // namespace sj::ewise
