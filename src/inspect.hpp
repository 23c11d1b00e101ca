// The inspector: cheap sparsity statistics of an operand (O(rows), sampled for many rows; no
// pass over nnz except where said), which the planner uses to choose and explain prints.
#pragma once
#include <cstdint>

#include "src/json_writer.hpp"
#include "src/tensor.hpp"

namespace sj {

struct MatrixStats {
  int64_t rows = 0, cols = 0, nnz = 0;
  double row_mean = 0, row_stddev = 0;
  int64_t row_min = 0, row_max = 0, row_p50 = 0, row_p90 = 0, row_p99 = 0;
  int64_t empty_rows = 0;
  int64_t bandwidth = -1;  // max |i - j| over entries (O(nnz); -1 when not computed)
  double density = 0;
  // 0 when the length statistics cover every row; else the rows of the sample they come
  // from (all but row_mean, which is exact: nnz / rows).
  int64_t sampled_rows = 0;
};

// With `may_sample` (the planner), past this many rows the length statistics come from a
// sample of kSampleBlocks blocks of kSampleBlockRows consecutive rows, spread evenly: a pass
// over every row's length (~1.1 ns a row here) was 127 us of the ~0.35 ms that inspecting
// luxembourg's A*A took (115k rows; 9.5% of the ~3.7 ms product, against a 2% budget). Blocks,
// not single rows, so that the sample reads whole cache lines of positions.
inline constexpr int64_t kExactStatsRows = 16384;
inline constexpr int64_t kSampleBlocks = 64, kSampleBlockRows = 64;

// Statistics of a CSR matrix (pass CSR; use as_csr for other formats); exact unless
// `may_sample`.
MatrixStats matrix_stats(const Tensor& csr, bool with_bandwidth = true, bool may_sample = false);

// Statistics of the transpose of a CSR matrix (its column lengths), without transposing:
// one pass over the coordinates. For deferred transposes (element-wise B^T). With
// `may_sample`, past kExactTransposeRows columns the length statistics but the mean come from
// the columns of every stride-th block of 64 (at most kSampleBlocks blocks; sampled_rows says
// how many columns).
inline constexpr int64_t kExactTransposeRows = 8192;
MatrixStats transpose_stats(const Tensor& csr, bool may_sample = false);

// Exact multiply count of the Gustavson SpGEMM A*B (A, B CSR): sum over A's entries (i,k)
// of nnz(B row k). O(nnz(A)).
int64_t spgemm_flops(const Tensor& a_csr, const Tensor& b_csr);

// The multiply count as the planner takes it, for cost models and explain: exact
// (spgemm_flops) where that is cheap next to the product (A of at most kExactFlopsEntries
// entries, or under 2 * kSampleBlocks * kSampleBlockRows rows); else estimated from the sample
// blocks of A's rows as (their multiplies / their entries) * nnz(A), exact again when the
// blocks hold fewer than kMinSampleEntries entries. On luxembourg the exact count was 84 us,
// 2.3% of the product alone. The kernels count exactly for their own decisions (result
// bounds, the dense workspace's width), so an estimate can only make a cost, or explain's
// note of which accumulator a wide product takes, differ near a threshold.
struct FlopsCount {
  double flops = 0;
  int64_t sampled_rows = 0;  // 0: exact
};
inline constexpr int64_t kExactFlopsEntries = 65536, kMinSampleEntries = 1024;
FlopsCount spgemm_flops_for_planning(const Tensor& a_csr, const Tensor& b_csr);
// The same over A's n coordinates and B's row positions (one typed loop: a per-entry switch on
// the coordinate type kept it from unrolling).
template <class I> int64_t multiply_count(const I* a_crd, int64_t n, const int64_t* b_pos) {
  int64_t flops = 0;
  for (int64_t p = 0; p < n; ++p) flops += b_pos[a_crd[p] + 1] - b_pos[a_crd[p]];
  return flops;
}

void write_json(JsonWriter& w, const MatrixStats& s);

}  // namespace sj
