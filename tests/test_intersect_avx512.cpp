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

}  // namespace
