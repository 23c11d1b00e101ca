#include "src/inspect.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "src/error.hpp"

namespace sj {
namespace {

// Lengths under this are counted in a histogram; the longer ones (at most nnz / kHistogram of
// them) are kept and sorted. Every statistic then comes from one pass over the lengths with no
// array of them: the earlier array and three nth_element passes over it made inspecting a
// 115k-row matrix cost ~2 ms, half of the product it planned for.
constexpr int64_t kHistogram = 1024;

// Calls block(r0, r1) for the rows [r0, r1) of each block of the sample: kSampleBlocks blocks
// of kSampleBlockRows, the b-th from row b * rows / kSampleBlocks (disjoint when rows >
// kSampleBlocks * kSampleBlockRows).
template <class Block> void for_sample_blocks(int64_t rows, Block&& block) {
  for (int64_t b = 0; b < kSampleBlocks; ++b) {
    const int64_t r0 = b * rows / kSampleBlocks;
    block(r0, std::min(rows, r0 + kSampleBlockRows));
  }
}

// Row-length statistics of the lengths len(k), k in [0, n) (every row, or a sample of them),
// s.cols set (no length exceeds it in a valid matrix, so the histogram need not be longer than
// cols + 1).
template <class Len> void fill_length_stats(MatrixStats& s, int64_t n, Len len) {
  const int64_t h = std::min(s.cols, kHistogram - 1) + 1;
  // Four histograms, one per row mod 4, summed after: consecutive rows of equal length would
  // otherwise increment one counter back to back, each waiting for the last (store-to-load
  // forwarding, ~5 cycles a row).
  std::vector<int64_t> count(static_cast<size_t>(4 * h), 0), longer;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t l = len(i);
    if (l < h) ++count[static_cast<size_t>((i & 3) * h + l)];
    else longer.push_back(l);
  }
  for (int64_t l = 0; l < h; ++l)
    count[static_cast<size_t>(l)] += count[static_cast<size_t>(h + l)] + count[static_cast<size_t>(2 * h + l)] +
                                     count[static_cast<size_t>(3 * h + l)];
  count.resize(static_cast<size_t>(h));
  std::sort(longer.begin(), longer.end());
  double sum = 0, sq = 0;
  for (int64_t l = 0; l < h; ++l) {
    const double c = static_cast<double>(count[static_cast<size_t>(l)]), d = static_cast<double>(l);
    sum += c * d;
    sq += c * d * d;
  }
  for (int64_t l : longer) sum += static_cast<double>(l), sq += static_cast<double>(l) * static_cast<double>(l);
  s.row_mean = sum / static_cast<double>(n);
  s.row_stddev = std::sqrt(std::max(0.0, sq / static_cast<double>(n) - s.row_mean * s.row_mean));
  s.empty_rows = count[0];
  // The k-th smallest length (0-based), k = round(q * (n - 1)).
  auto kth = [&](int64_t k) {
    for (int64_t l = 0; l < h; ++l) {
      if (k < count[static_cast<size_t>(l)]) return l;
      k -= count[static_cast<size_t>(l)];
    }
    return longer[static_cast<size_t>(k)];
  };
  auto pct = [&](double q) { return kth(std::min(n - 1, static_cast<int64_t>(q * static_cast<double>(n - 1) + 0.5))); };
  s.row_min = kth(0);
  s.row_max = kth(n - 1);
  s.row_p50 = pct(0.5);
  s.row_p90 = pct(0.9);
  s.row_p99 = pct(0.99);
}

// fill_length_stats over the n lengths of a sample of s.rows rows or columns: empty ones
// scaled up to the whole, the mean exact (nnz / rows), sampled_rows = n.
template <class Len> void fill_sampled_length_stats(MatrixStats& s, int64_t n, Len len) {
  fill_length_stats(s, n, len);
  s.sampled_rows = n;
  s.empty_rows = static_cast<int64_t>(
      std::llround(static_cast<double>(s.empty_rows) * static_cast<double>(s.rows) / static_cast<double>(n)));
  s.row_mean = static_cast<double>(s.nnz) / static_cast<double>(s.rows);
}

// The multiply count over A's entries [p0, p0 + n).
int64_t multiply_count_of(const Tensor& a, int64_t p0, int64_t n, const int64_t* b_pos) {
  return a.index_type == IndexType::I32 ? multiply_count(a.levels[1].crd.as<int32_t>() + p0, n, b_pos)
                                        : multiply_count(a.levels[1].crd.as<int64_t>() + p0, n, b_pos);
}

}  // namespace

MatrixStats matrix_stats(const Tensor& t, bool with_bandwidth, bool may_sample) {
  if (!is_csr(t)) fail(SJ_ERR_INTERNAL, "matrix_stats needs CSR, got ", t.describe());
  MatrixStats s;
  s.rows = t.dims[0];
  s.cols = t.dims[1];
  s.nnz = t.nnz();
  if (s.rows > 0 && s.cols > 0) s.density = static_cast<double>(s.nnz) / s.rows / s.cols;
  if (s.rows == 0) return s;
  const int64_t* pos = t.levels[1].pos.as<int64_t>();
  if (!may_sample || s.rows <= kExactStatsRows) {
    fill_length_stats(s, s.rows, [pos](int64_t i) { return pos[i + 1] - pos[i]; });
  } else {
    std::vector<int64_t> sample;
    sample.reserve(kSampleBlocks * kSampleBlockRows);
    for_sample_blocks(s.rows, [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; ++i) sample.push_back(pos[i + 1] - pos[i]);
    });
    fill_sampled_length_stats(s, static_cast<int64_t>(sample.size()),
                              [&sample](int64_t k) { return sample[static_cast<size_t>(k)]; });
  }
  if (with_bandwidth) {
    s.bandwidth = 0;
    for (int64_t i = 0; i < s.rows; ++i)
      for (int64_t p = pos[i]; p < pos[i + 1]; ++p)
        s.bandwidth = std::max(s.bandwidth, std::abs(crd_at(t.levels[1], t.index_type, p) - i));
  }
  return s;
}

namespace {
// Adds 1 to count[slot(j)] for each stored coordinate j of t where slot(j) >= 0.
template <class Slot> void count_coordinates(const Tensor& t, std::vector<int64_t>& count, Slot slot) {
  const Level& lv = t.levels[1];
  const int64_t n = t.nnz();
  auto run = [&](const auto* crd) {
    for (int64_t p = 0; p < n; ++p)
      if (const int64_t k = slot(static_cast<int64_t>(crd[p])); k >= 0) ++count[static_cast<size_t>(k)];
  };
  if (t.index_type == IndexType::I32) run(lv.crd.as<int32_t>());
  else run(lv.crd.as<int64_t>());
}
}  // namespace

MatrixStats transpose_stats(const Tensor& t, bool may_sample) {
  if (!is_csr(t)) fail(SJ_ERR_INTERNAL, "transpose_stats needs CSR, got ", t.describe());
  MatrixStats s;
  s.rows = t.dims[1];
  s.cols = t.dims[0];
  s.nnz = t.nnz();
  if (s.rows > 0 && s.cols > 0) s.density = static_cast<double>(s.nnz) / s.rows / s.cols;
  if (s.rows == 0) return s;
  if (!may_sample || s.rows <= kExactTransposeRows) {  // one counter per column
    std::vector<int64_t> len(static_cast<size_t>(s.rows), 0);
    count_coordinates(t, len, [](int64_t j) { return j; });
    fill_length_stats(s, s.rows, [&len](int64_t i) { return len[static_cast<size_t>(i)]; });
    return s;
  }
  // Sampled: the columns of every stride-th block of 64 (stride a power of two, so that an
  // entry's test is a shift and a mask), at most kSampleBlocks blocks, counted in an array that
  // stays in L1. A counter per column was an array of 8 bytes a column: on luxembourg (115k
  // columns) ~350 us a call, most of it page faults of that fresh array (4.3 ms in a new
  // process), against ~0.6 ms for the element-wise product it planned.
  const int64_t blocks = (s.rows + 63) / 64;
  const int64_t stride = static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>((blocks + kSampleBlocks - 1) / kSampleBlocks)));
  const int shift = 6 + std::countr_zero(static_cast<uint64_t>(stride));
  const int64_t sampled_blocks = (blocks + stride - 1) / stride;
  std::vector<int64_t> count(static_cast<size_t>(sampled_blocks * 64), 0);
  count_coordinates(t, count, [stride, shift](int64_t j) {
    return ((j >> 6) & (stride - 1)) == 0 ? (j >> shift) * 64 + (j & 63) : int64_t{-1};
  });
  // Sampled block b holds columns [b * stride * 64, + 64) that exist (the last may be cut).
  const int64_t last = s.rows - (sampled_blocks - 1) * stride * 64;  // columns in the last block
  fill_sampled_length_stats(s, (sampled_blocks - 1) * 64 + std::min<int64_t>(64, last),
                            [&count](int64_t k) { return count[static_cast<size_t>(k)]; });
  return s;
}

int64_t spgemm_flops(const Tensor& a, const Tensor& b) {
  return multiply_count_of(a, 0, a.nnz(), b.levels[1].pos.as<int64_t>());
}

FlopsCount spgemm_flops_for_planning(const Tensor& a, const Tensor& b) {
  const int64_t rows = a.dims[0];
  if (a.nnz() <= kExactFlopsEntries || rows < 2 * kSampleBlocks * kSampleBlockRows)
    return {static_cast<double>(spgemm_flops(a, b)), 0};
  const int64_t* apos = a.levels[1].pos.as<int64_t>();
  const int64_t* bpos = b.levels[1].pos.as<int64_t>();
  int64_t flops = 0, entries = 0, sampled = 0;
  for_sample_blocks(rows, [&](int64_t r0, int64_t r1) {  // a block's rows are one run of A's entries
    const int64_t p0 = apos[r0], n = apos[r1] - p0;
    flops += multiply_count_of(a, p0, n, bpos);
    entries += n;
    sampled += r1 - r0;
  });
  if (entries < kMinSampleEntries) return {static_cast<double>(spgemm_flops(a, b)), 0};
  return {std::round(static_cast<double>(flops) / static_cast<double>(entries) * static_cast<double>(a.nnz())), sampled};
}

void write_json(JsonWriter& w, const MatrixStats& s) {
  w.begin_object()
      .field("rows", s.rows).field("cols", s.cols).field("nnz", s.nnz).field("density", s.density)
      .field("row_mean", s.row_mean).field("row_stddev", s.row_stddev).field("row_min", s.row_min)
      .field("row_p50", s.row_p50).field("row_p90", s.row_p90).field("row_p99", s.row_p99)
      .field("row_max", s.row_max).field("empty_rows", s.empty_rows);
  if (s.bandwidth >= 0) w.field("bandwidth", s.bandwidth);
  if (s.sampled_rows > 0) w.field("sampled_rows", s.sampled_rows);
  w.end_object();
}

}  // namespace sj
