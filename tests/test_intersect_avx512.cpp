// The AVX-512 block intersections (kernels/intersect_avx512.hpp: broadcast compares, and
// VP2INTERSECT where the CPU has it) against a scalar merge: random
// sorted segments of every length from 0 to 40 (partial blocks, exactly 16 and 32, one side
// exhausted first) drawn from small universes (many matches) and large ones (few), coordinates
// at 0 and up to INT32_MAX, identical segments, disjoint ones; products bit for bit, and
// nothing written past the matches. The element-wise product's row merge (ewise_kernels.hpp:
// single entries, then up to 64 a side inline: equal rows or the blocks; past that equal rows,
// disjoint ranges, skew, the blocks or the scalar merge) on the same pairs, within its row's
// bound.
#include "kernels/intersect_avx512.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/ewise_kernels.hpp"
#include "src/semiring.hpp"

namespace {

using S = sj::PlusTimes<double>;

std::vector<int32_t> sorted_set(std::mt19937_64& g, int64_t n, int64_t lo, int64_t hi) {
  std::vector<int32_t> v;
  std::uniform_int_distribution<int64_t> d(lo, hi);
  while (static_cast<int64_t>(v.size()) < n && hi - lo + 1 >= n) {
    v.push_back(static_cast<int32_t>(d(g)));
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  return v;
}

// What runs: the blocks with broadcast compares or with VP2INTERSECT, or the row merge.
enum class Way { Broadcast, Vp2, RowMerge };
Way way = Way::Broadcast;

void check(const std::vector<int32_t>& a, const std::vector<int32_t>& b, std::mt19937_64& g) {
  std::uniform_real_distribution<double> u(-2, 2);
  std::vector<double> av(a.size()), bv(b.size());
  for (auto& x : av) x = u(g);
  for (auto& x : bv) x = u(g);
  std::vector<int32_t> want_c;
  std::vector<double> want_v;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    if (a[i] < b[j]) ++i;
    else if (b[j] < a[i]) ++j;
    else want_c.push_back(a[i]), want_v.push_back(S::mul(av[i], bv[j])), ++i, ++j;
  }
  const size_t room = std::min(a.size(), b.size()) + 4;
  const size_t off = way == Way::RowMerge ? 2 : 0;  // the row merge appends after 2 entries
  std::vector<int32_t> oc_all(room + off, -7);
  std::vector<double> ov_all(room + off, -7.0);
  int32_t* const oc = oc_all.data() + off;
  double* const ov = ov_all.data() + off;
  const auto la = static_cast<int64_t>(a.size()), lb = static_cast<int64_t>(b.size());
  int64_t q = 0;
  switch (way) {
    case Way::Broadcast:
      q = sj::intersect_avx512::mult<S>(a.data(), av.data(), la, b.data(), bv.data(), lb, oc, ov);
      break;
    case Way::Vp2:
      q = sj::intersect_avx512::mult_vp2<S>(a.data(), av.data(), la, b.data(), bv.data(), lb, oc, ov);
      break;
    case Way::RowMerge:
      q = sj::ewise::merge_row_mult<S>(a.data(), av.data(), 0, la, b.data(), bv.data(), 0, lb, oc_all.data(),
                                       ov_all.data(), 2) - 2;
      break;
  }
  ASSERT_EQ(q, static_cast<int64_t>(want_c.size())) << a.size() << " x " << b.size();
  EXPECT_TRUE(std::equal(want_c.begin(), want_c.end(), oc));
  EXPECT_TRUE(std::equal(want_v.begin(), want_v.end(), ov));
  // the row merge's scalar steps may write at the next free entry, within the row's bound
  const size_t clean = way == Way::RowMerge ? std::max<size_t>(static_cast<size_t>(q), std::min(a.size(), b.size()))
                                            : static_cast<size_t>(q);
  for (size_t k = clean; k < room; ++k) EXPECT_EQ(oc[k], -7) << "written past the matches";
  for (size_t k = 0; k < off; ++k) EXPECT_EQ(oc_all[k], -7) << "written before the row";
}

void check_all() {
  std::mt19937_64 g(5);
  const int64_t top = std::numeric_limits<int32_t>::max();
  for (int64_t la = 0; la <= 40; ++la)
    for (int64_t lb = 0; lb <= 40; ++lb) {
      check(sorted_set(g, la, 0, 60), sorted_set(g, lb, 0, 60), g);                  // many matches
      check(sorted_set(g, la, 0, 5000), sorted_set(g, lb, 0, 5000), g);              // few
      check(sorted_set(g, la, top - 50, top), sorted_set(g, lb, top - 50, top), g);  // at the int32 limit
    }
  const auto same = sorted_set(g, 37, 0, 100);
  check(same, same, g);
  check(sorted_set(g, 20, 0, 99), sorted_set(g, 20, 100, 199), g);  // disjoint
  check({0}, {0}, g);
  check({top}, {0, top}, g);
}

TEST(IntersectAvx512, MatchesTheScalarMerge) {
  if (!sj::intersect_avx512::available()) GTEST_SKIP() << "CPU lacks AVX-512F";
  way = Way::Broadcast;
  check_all();
}

TEST(IntersectAvx512, Vp2intersectMatchesTheScalarMerge) {
  if (!sj::intersect_avx512::has_vp2intersect()) GTEST_SKIP() << "CPU lacks AVX512_VP2INTERSECT";
  way = Way::Vp2;
  check_all();
}

// On any CPU: without AVX-512 every pair takes the general tests and the scalar merge.
TEST(IntersectAvx512, RowMergeMatchesTheScalarMerge) {
  way = Way::RowMerge;
  check_all();
  std::mt19937_64 g(9);
  check(sorted_set(g, 3, 0, 1000), sorted_set(g, 200, 0, 1000), g);  // skewed: galloping
  check(sorted_set(g, 200, 0, 1000), sorted_set(g, 3, 0, 1000), g);
  // past the inline blocks (64 a side): equal rows, disjoint ranges, the general blocks
  const auto long_row = sorted_set(g, 100, 0, 300);
  check(long_row, long_row, g);
  check(sorted_set(g, 80, 0, 99), sorted_set(g, 70, 200, 299), g);
  for (int64_t la : {65, 90, 150})
    for (int64_t lb : {1, 20, 64, 65, 120}) check(sorted_set(g, la, 0, 400), sorted_set(g, lb, 0, 400), g);
}

// The element-wise product's row loop (ewise::mult_rows) over many rows at once: empty rows,
// single entries (matching or not), equal rows, pairs up to 64 a side and long ones. The long
// pairs come with and without matches. Every route of long pairs (LongRoute; the "generated
// kernel" is a stand-in that counts its calls), and on AVX-512 both compares: each row's
// entries and products must be the scalar merge's, ends[] each row's end, nothing written past
// a chunk's bound (the sum of min(la, lb) over its rows), and the result must not depend on
// where a chunk starts.
TEST(IntersectAvx512, RowLoopMatchesTheScalarMerge) {
  std::mt19937_64 g(11);
  std::vector<std::vector<int32_t>> ra, rb;
  auto pair = [&](std::vector<int32_t> a, std::vector<int32_t> b) { ra.push_back(std::move(a)), rb.push_back(std::move(b)); };
  const int32_t top = std::numeric_limits<int32_t>::max();
  for (int rep = 0; rep < 3; ++rep) {
    pair({}, sorted_set(g, 5, 0, 50));
    pair(sorted_set(g, 5, 0, 50), {});
    pair({7}, {7});
    pair({7}, {8});
    pair({top}, {top});
    for (int k = 0; k < 20; ++k) pair(sorted_set(g, 200, 0, 100000), sorted_set(g, 180, 100001, 300000));  // long, no match
    for (int k = 0; k < 20; ++k) pair(sorted_set(g, 120, 0, 400), sorted_set(g, 150, 0, 400));  // long, many matches
    const auto same = sorted_set(g, 40, 0, 200);
    pair(same, same);
    const auto same_long = sorted_set(g, 90, 0, 200);
    pair(same_long, same_long);
    for (int k = 0; k < 30; ++k) pair(sorted_set(g, 1 + k % 64, 0, 300), sorted_set(g, 1 + (k * 7) % 64, 0, 300));
    pair(sorted_set(g, 3, 0, 1000), sorted_set(g, 300, 0, 1000));  // skewed
    pair(sorted_set(g, 70, top - 200, top), sorted_set(g, 80, top - 200, top));  // long, at the int32 limit
  }
  const auto rows = static_cast<int64_t>(ra.size());
  std::vector<int64_t> ap{0}, bp{0};
  std::vector<int32_t> ac, bc;
  std::vector<double> av, bv;
  std::uniform_real_distribution<double> u(-2, 2);
  for (int64_t i = 0; i < rows; ++i) {
    for (int32_t c : ra[i]) ac.push_back(c), av.push_back(u(g));
    for (int32_t c : rb[i]) bc.push_back(c), bv.push_back(u(g));
    ap.push_back(static_cast<int64_t>(ac.size())), bp.push_back(static_cast<int64_t>(bc.size()));
  }
  const sj::CsView<int32_t, double> A{rows, top, ap.data(), ac.data(), av.data()};
  const sj::CsView<int32_t, double> B{rows, top, bp.data(), bc.data(), bv.data()};
  std::vector<int32_t> want_c;
  std::vector<double> want_v;
  std::vector<int64_t> want_ends;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t p = ap[i], r = bp[i]; p < ap[i + 1] && r < bp[i + 1];) {
      if (ac[p] < bc[r]) ++p;
      else if (bc[r] < ac[p]) ++r;
      else want_c.push_back(ac[p]), want_v.push_back(S::mul(av[p], bv[r])), ++p, ++r;
    }
    want_ends.push_back(static_cast<int64_t>(want_c.size()));
  }
  // Pairs that may go to the generated kernel (min(la, lb) >= 24); on AVX-512 only those with a
  // side over 64.
  auto eligible = [&](bool avx512) {
    int64_t n = 0;
    for (int64_t i = 0; i < rows; ++i) {
      const auto la = static_cast<int64_t>(ra[i].size()), lb = static_cast<int64_t>(rb[i].size());
      n += std::min(la, lb) >= 24 && (!avx512 || std::max(la, lb) > sj::ewise::kInlineBlocksMax);
    }
    return n;
  };
  using Route = sj::ewise::LongRoute;
  const bool avx512 = sj::intersect_avx512::available();
  // way 0: the dispatcher; way 1: the broadcast-compare loop itself (VP2INTERSECT hosts run
  // the other one through the dispatcher)
  for (int way = 0; way < (avx512 ? 2 : 1); ++way)
    for (const Route route : {Route::ByLength, Route::LongToGenerated, Route::LongToBlocks})
      for (const int64_t split : {int64_t{0}, rows / 3, rows - 1}) {
        int64_t generated = 0;
        std::vector<int32_t> oc;
        std::vector<double> ov;
        std::vector<int64_t> ends(static_cast<size_t>(rows), -1);
        for (auto [r0, r1] : {std::pair{int64_t{0}, split}, std::pair{split, rows}}) {
          // each chunk gets exactly its bound, sum of min(la, lb), then sentinels
          size_t room = 0;
          for (int64_t i = r0; i < r1; ++i) room += std::min(ra[i].size(), rb[i].size());
          std::vector<int32_t> c(room + 8, -7);
          std::vector<double> v(room + 8, -7.0);
          auto long_pair = [&](int64_t a0, int64_t a1, int64_t b0, int64_t b1, int64_t q) {
            ++generated;
            return sj::ewise::merge_row_mult_general<S>(ac.data(), av.data(), a0, a1, bc.data(), bv.data(), b0, b1,
                                                        c.data(), v.data(), q);
          };
          const int64_t n =
              way == 1 ? sj::ewise::mult_rows_avx512<false, S>(A, B, r0, r1, c.data(), v.data(), ends.data(), 24,
                                                               route == Route::LongToGenerated, long_pair)
                       : sj::ewise::mult_rows<S>(A, B, r0, r1, c.data(), v.data(), ends.data(), 24, route, long_pair);
          for (size_t k = room; k < room + 8; ++k) ASSERT_EQ(c[k], -7) << "written past the chunk's bound";
          for (int64_t i = r0; i < r1; ++i) ends[i] += static_cast<int64_t>(oc.size());
          oc.insert(oc.end(), c.begin(), c.begin() + n);
          ov.insert(ov.end(), v.begin(), v.begin() + n);
        }
        ASSERT_EQ(oc.size(), want_c.size()) << way << " " << static_cast<int>(route) << " " << split;
        EXPECT_EQ(oc, want_c);
        EXPECT_TRUE(std::equal(want_v.begin(), want_v.end(), ov.begin()));
        EXPECT_EQ(ends, want_ends);
        if (way == 1) EXPECT_EQ(generated, route == Route::LongToGenerated ? eligible(true) : 0);  // no ByLength here
        else if (route == Route::ByLength || !avx512) EXPECT_EQ(generated, eligible(false));
        else if (route == Route::LongToGenerated) EXPECT_EQ(generated, eligible(true));
        else EXPECT_EQ(generated, 0);
      }
}

// The route of long pairs, from a sample of the call's rows: rows of random coordinates (few
// matches) go to the blocks, rows sharing most coordinates to the generated kernel; a forced
// kernel (not tiered), int64 coordinates and CPUs without AVX-512 route by length alone.
TEST(IntersectAvx512, LongPairRouteFollowsTheMatches) {
  std::mt19937_64 g(3);
  auto matrix = [&](bool overlap, std::vector<int64_t>& pos, std::vector<int32_t>& crd, std::vector<double>& val,
                    std::vector<int64_t>& pos2, std::vector<int32_t>& crd2) {
    pos = {0}, pos2 = {0};
    for (int i = 0; i < 500; ++i) {
      const auto a = sorted_set(g, 100, 0, 1 << 30);
      const auto b = overlap ? a : sorted_set(g, 100, 0, 1 << 30);
      crd.insert(crd.end(), a.begin(), a.end()), crd2.insert(crd2.end(), b.begin(), b.end());
      pos.push_back(static_cast<int64_t>(crd.size())), pos2.push_back(static_cast<int64_t>(crd2.size()));
    }
    val.assign(std::max(crd.size(), crd2.size()), 1.0);
  };
  using Route = sj::ewise::LongRoute;
  for (const bool overlap : {false, true}) {
    std::vector<int64_t> ap, bp;
    std::vector<int32_t> ac, bc;
    std::vector<double> val;
    matrix(overlap, ap, ac, val, bp, bc);
    const sj::CsView<int32_t, double> A{500, 1 << 30, ap.data(), ac.data(), val.data()};
    const sj::CsView<int32_t, double> B{500, 1 << 30, bp.data(), bc.data(), val.data()};
    EXPECT_EQ(sj::ewise::long_pair_route(A, B, 24, false), Route::ByLength);
    if (!sj::intersect_avx512::available()) {
      EXPECT_EQ(sj::ewise::long_pair_route(A, B, 24, true), Route::ByLength);
      continue;
    }
    EXPECT_EQ(sj::ewise::long_pair_route(A, B, 24, true), overlap ? Route::LongToGenerated : Route::LongToBlocks);
    // pairs shorter than the kernels' threshold are not long
    EXPECT_EQ(sj::ewise::long_pair_route(A, B, 200, true), Route::LongToBlocks);
  }
  std::vector<int64_t> p{0, 1};
  std::vector<int64_t> c{5};
  std::vector<double> v{1.0};
  const sj::CsView<int64_t, double> W{1, 10, p.data(), c.data(), v.data()};
  EXPECT_EQ(sj::ewise::long_pair_route(W, W, 24, true), Route::ByLength);
}

}  // namespace
