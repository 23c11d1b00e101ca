// The inspector's statistics (src/inspect.hpp) against a brute-force computation: the
// histogram-based percentiles must give the k-th smallest length exactly, long rows included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "random_matrices.hpp"
#include "src/allocator.hpp"
#include "src/inspect.hpp"
#include "src/tensor.hpp"

namespace {

using sj::CsResult;

// A CSR matrix whose row i holds lengths[i] entries (columns spread over cols).
CsResult<int32_t, double> with_row_lengths(const std::vector<int64_t>& lengths, int64_t cols) {
  CsResult<int32_t, double> m;
  m.outer = static_cast<int64_t>(lengths.size());
  m.inner = cols;
  m.pos.push_back(0);
  for (int64_t len : lengths) {
    for (int64_t j = 0; j < len; ++j) {
      m.crd.push_back(static_cast<int32_t>(j * cols / std::max<int64_t>(len, 1)));
      m.val.push_back(1.0);
    }
    m.pos.push_back(static_cast<int64_t>(m.crd.size()));
  }
  return m;
}

// The statistics as the inspector defines them, computed the obvious way.
void expect_stats_of(const sj::MatrixStats& s, std::vector<int64_t> len) {
  const int64_t n = static_cast<int64_t>(len.size());
  ASSERT_EQ(s.rows, n);
  double sum = 0, sq = 0;
  int64_t empty = 0;
  for (int64_t l : len) sum += static_cast<double>(l), sq += static_cast<double>(l) * static_cast<double>(l),
                        empty += l == 0;
  std::sort(len.begin(), len.end());
  auto pct = [&](double q) { return len[std::min<size_t>(n - 1, static_cast<size_t>(q * (n - 1) + 0.5))]; };
  EXPECT_EQ(s.row_min, len.front());
  EXPECT_EQ(s.row_max, len.back());
  EXPECT_EQ(s.row_p50, pct(0.5));
  EXPECT_EQ(s.row_p90, pct(0.9));
  EXPECT_EQ(s.row_p99, pct(0.99));
  EXPECT_EQ(s.empty_rows, empty);
  EXPECT_NEAR(s.row_mean, sum / n, 1e-9 * (1 + sum / n));
  const double mean = sum / n;
  EXPECT_NEAR(s.row_stddev, std::sqrt(std::max(0.0, sq / n - mean * mean)), 1e-6 * (1 + mean));
}

sj::Tensor tensor_of(const CsResult<int32_t, double>& m) {
  return sj::to_tensor(sj::default_allocator(), true, m, sj::ValueType::F64);
}

TEST(Inspect, PercentilesAreTheKthSmallestLengthForShortAndLongRows) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    sj::test::Rng rng(seed);
    const int64_t rows = rng.uniform_int(1, 300);
    std::vector<int64_t> len(static_cast<size_t>(rows));
    // Mostly short rows; some empty; a share past the histogram (1024) so that the high
    // percentiles fall among the long rows on some seeds.
    const double long_share = seed % 4 == 0 ? 0.5 : 0.03;
    for (auto& l : len)
      l = rng.bernoulli(0.1) ? 0 : rng.bernoulli(long_share) ? rng.uniform_int(1000, 3000) : rng.uniform_int(1, 40);
    const auto m = with_row_lengths(len, 4000);
    SCOPED_TRACE(testing::Message() << "seed " << seed << ", rows " << rows);
    expect_stats_of(sj::matrix_stats(tensor_of(m)), len);
  }
}

TEST(Inspect, OneRowEmptyRowsAndEqualLengths) {
  expect_stats_of(sj::matrix_stats(tensor_of(with_row_lengths({7}, 10))), {7});
  expect_stats_of(sj::matrix_stats(tensor_of(with_row_lengths({0, 0, 0}, 10))), {0, 0, 0});
  expect_stats_of(sj::matrix_stats(tensor_of(with_row_lengths({1023, 1024, 1025}, 2000))), {1023, 1024, 1025});
  expect_stats_of(sj::matrix_stats(tensor_of(with_row_lengths(std::vector<int64_t>(50, 5000), 6000))),
                  std::vector<int64_t>(50, 5000));
  // No rows: only the shape and counts.
  const sj::MatrixStats none = sj::matrix_stats(tensor_of(with_row_lengths({}, 10)));
  EXPECT_EQ(none.rows, 0);
  EXPECT_EQ(none.nnz, 0);
}

TEST(Inspect, TransposeStatsAreTheColumnLengths) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    sj::test::Rng rng(seed);
    const int64_t rows = rng.uniform_int(1, 200), cols = rng.uniform_int(1, 200);
    const auto m = sj::test::random_matrix<int32_t, double>(rng, rows, cols);
    std::vector<int64_t> col_len(static_cast<size_t>(cols), 0);
    for (int32_t j : m.crd) ++col_len[static_cast<size_t>(j)];
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    const sj::MatrixStats s = sj::transpose_stats(tensor_of(m));
    EXPECT_EQ(s.cols, rows);
    EXPECT_EQ(s.nnz, static_cast<int64_t>(m.crd.size()));
    expect_stats_of(s, col_len);
  }
}

TEST(Inspect, MultiplyCountIsTheSumOfBRowLengthsOverAEntries) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    sj::test::Rng rng(seed);
    const int64_t n = rng.uniform_int(1, 150);
    const auto a = sj::test::random_matrix<int32_t, double>(rng, n, n);
    const auto b = sj::test::random_matrix<int32_t, double>(rng, n, n);
    int64_t flops = 0;
    for (int32_t k : a.crd) flops += b.pos[k + 1] - b.pos[k];
    EXPECT_EQ(sj::spgemm_flops(tensor_of(a), tensor_of(b)), flops) << "seed " << seed;
  }
}

// Past kExactStatsRows the length statistics come from the sample blocks; lengths i % 8 put
// the same distribution in every block of 64 rows as in the whole matrix, so every statistic
// of the sample equals the exact one (empty rows scaled up to the matrix).
TEST(Inspect, ManyRowsAreSampledInBlocksWithTheMeanExact) {
  std::vector<int64_t> len(20000);
  for (size_t i = 0; i < len.size(); ++i) len[i] = static_cast<int64_t>(i % 8);
  const sj::MatrixStats s = sj::matrix_stats(tensor_of(with_row_lengths(len, 100)), false, /*may_sample=*/true);
  EXPECT_EQ(s.sampled_rows, sj::kSampleBlocks * sj::kSampleBlockRows);
  expect_stats_of(s, len);
  // Without may_sample (sparsejit inspect) every row counts.
  const sj::MatrixStats e = sj::matrix_stats(tensor_of(with_row_lengths(len, 100)));
  EXPECT_EQ(e.sampled_rows, 0);
  expect_stats_of(e, len);
  // A sample is a sample: a long row outside its blocks is not seen (row 100 is in none:
  // they start at multiples of 20000 / 64 = 312.5), but the mean still counts it.
  len[100] = 90;
  const sj::MatrixStats t = sj::matrix_stats(tensor_of(with_row_lengths(len, 100)), false, true);
  EXPECT_EQ(t.row_max, 7);
  EXPECT_EQ(sj::matrix_stats(tensor_of(with_row_lengths(len, 100))).row_max, 90);
  EXPECT_NEAR(t.row_mean, (3.5 * 20000 - 4 + 90) / 20000, 1e-12);
  // At the threshold every row is counted; one row past it, the whole sample of full blocks.
  len.assign(sj::kExactStatsRows, 3);
  len[100] = 90;
  const sj::MatrixStats u = sj::matrix_stats(tensor_of(with_row_lengths(len, 100)), false, true);
  EXPECT_EQ(u.sampled_rows, 0);
  expect_stats_of(u, len);
  len.push_back(3);
  EXPECT_EQ(sj::matrix_stats(tensor_of(with_row_lengths(len, 100)), false, true).sampled_rows,
            sj::kSampleBlocks * sj::kSampleBlockRows);
}

// Past kExactTransposeRows columns the column lengths come from every stride-th block of 64
// columns: with lengths j % 8 each block has the whole's distribution, so the statistics are
// exact; the last sampled block is cut at the matrix's edge (20000 = 39 * 8 * 64 + 32).
TEST(Inspect, TransposeStatsOfManyColumnsAreSampledInBlocks) {
  const int64_t cols = 20000;
  CsResult<int32_t, double> m;
  m.outer = 9;
  m.inner = cols;
  m.pos.push_back(0);
  for (int64_t i = 0; i < m.outer; ++i) {
    for (int64_t j = 0; j < cols; ++j)
      if (j % 8 > i || (i == 8 && j == 100)) m.crd.push_back(static_cast<int32_t>(j)), m.val.push_back(1.0);
    m.pos.push_back(static_cast<int64_t>(m.crd.size()));
  }
  std::vector<int64_t> col_len(cols);
  for (int32_t j : m.crd) ++col_len[static_cast<size_t>(j)];
  const sj::MatrixStats s = sj::transpose_stats(tensor_of(m), /*may_sample=*/true);
  EXPECT_EQ(s.sampled_rows, 39 * 64 + 32);
  EXPECT_EQ(sj::transpose_stats(tensor_of(m)).sampled_rows, 0);
  EXPECT_EQ(s.nnz, static_cast<int64_t>(m.crd.size()));
  // Column 100 (length 5 with row 8's entry; in no sampled block: they start at multiples of
  // 8 * 64) counts only in the mean, which is exact.
  EXPECT_NEAR(s.row_mean, static_cast<double>(m.crd.size()) / cols, 1e-12);
  col_len[100] = 100 % 8;
  sj::MatrixStats without = s;
  without.row_mean = (static_cast<double>(m.crd.size()) - 1) / cols;
  expect_stats_of(without, col_len);
  // One column past the threshold: 129 blocks, every 4th sampled, the last of them 1 column.
  CsResult<int32_t, double> one;
  one.outer = 1;
  one.inner = sj::kExactTransposeRows + 1;
  one.pos = {0, one.inner};
  for (int64_t j = 0; j < one.inner; ++j) one.crd.push_back(static_cast<int32_t>(j)), one.val.push_back(1.0);
  const sj::MatrixStats o = sj::transpose_stats(tensor_of(one), true);
  EXPECT_EQ(o.sampled_rows, 32 * 64 + 1);
  EXPECT_EQ(o.row_min, 1);
  EXPECT_EQ(o.row_max, 1);
  EXPECT_EQ(o.empty_rows, 0);
}

TEST(Inspect, PlanningMultiplyCountIsExactWhenCheapElseSampled) {
  sj::test::Rng rng(7);
  // Small: exact.
  const auto small = sj::test::random_matrix<int32_t, double>(rng, 300, 300);
  const sj::FlopsCount c0 = sj::spgemm_flops_for_planning(tensor_of(small), tensor_of(small));
  EXPECT_EQ(c0.sampled_rows, 0);
  EXPECT_EQ(c0.flops, static_cast<double>(sj::spgemm_flops(tensor_of(small), tensor_of(small))));
  // 30000 rows of 1-15 entries (~240k): estimated from the sample blocks, close to the count.
  std::vector<int64_t> len(30000);
  for (auto& l : len) l = rng.uniform_int(1, 15);
  const sj::Tensor a = tensor_of(with_row_lengths(len, 30000));
  std::vector<int64_t> blen(30000);
  for (auto& l : blen) l = rng.uniform_int(0, 30);
  const sj::Tensor b = tensor_of(with_row_lengths(blen, 30000));
  const double exact = static_cast<double>(sj::spgemm_flops(a, b));
  const sj::FlopsCount c1 = sj::spgemm_flops_for_planning(a, b);
  EXPECT_EQ(c1.sampled_rows, sj::kSampleBlocks * sj::kSampleBlockRows);
  EXPECT_NEAR(c1.flops, exact, 0.05 * exact);
  EXPECT_NE(c1.flops, exact);  // (a sample, not the count: fails if the exact path ran)
  // The thresholds: under 8192 rows, or at most 65536 entries of A, the count is exact.
  auto rows_of = [&](int64_t rows, int64_t per_row) {
    return tensor_of(with_row_lengths(std::vector<int64_t>(static_cast<size_t>(rows), per_row), 30000));
  };
  const sj::Tensor b8k = tensor_of(with_row_lengths(std::vector<int64_t>(30000, 3), 30000));
  EXPECT_EQ(sj::spgemm_flops_for_planning(rows_of(8191, 9), b8k).sampled_rows, 0);
  EXPECT_GT(sj::spgemm_flops_for_planning(rows_of(8192, 9), b8k).sampled_rows, 0);
  EXPECT_EQ(sj::spgemm_flops_for_planning(rows_of(8192, 8), b8k).sampled_rows, 0);  // 65536 entries
  std::vector<int64_t> just_over(8192, 8);
  just_over[5000] = 9;  // 65537 entries
  EXPECT_GT(sj::spgemm_flops_for_planning(tensor_of(with_row_lengths(just_over, 30000)), b8k).sampled_rows, 0);
  // Blocks holding too few entries to estimate from: exact. 70000 entries in rows no block holds.
  std::vector<int64_t> sparse_len(30000, 0);
  for (int r = 0; r < 10; ++r) sparse_len[200 + 468 * r] = 7000;
  const sj::Tensor s = tensor_of(with_row_lengths(sparse_len, 30000));
  const sj::FlopsCount c3 = sj::spgemm_flops_for_planning(s, b);
  EXPECT_EQ(c3.sampled_rows, 0);
  EXPECT_EQ(c3.flops, static_cast<double>(sj::spgemm_flops(s, b)));
}

}  // namespace
