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

// Past this many rows the length statistics come from a sample of kSampleBlocks blocks of
// kSampleBlockRows consecutive rows, spread evenly: a pass over every row's length (~1.1 ns a
// row here) cost 9.5% of luxembourg's A*A (115k rows, ~3.7 ms), against the 2% budget for
// inspecting. Blocks, not single rows, so that the sample reads whole cache lines of positions.
inline constexpr int64_t kExactStatsRows = 16384;
inline constexpr int64_t kSampleBlocks = 64, kSampleBlockRows = 64;

// Statistics of a CSR matrix (pass CSR; use as_csr for other formats).
MatrixStats matrix_stats(const Tensor& csr, bool with_bandwidth = true);

// Statistics of the transpose of a CSR matrix (its column lengths), without transposing:
// one pass over the coordinates. For deferred transposes (element-wise B^T). Past
// kExactTransposeRows columns the length statistics but the mean come from the columns of
// evenly spaced blocks of 64 (sampled_rows says how many).
inline constexpr int64_t kExactTransposeRows = 8192;
MatrixStats transpose_stats(const Tensor& csr);

// Exact multiply count of the Gustavson SpGEMM A*B (A, B CSR): sum over A's entries (i,k)
// of nnz(B row k). O(nnz(A)).
int64_t spgemm_flops(const Tensor& a_csr, const Tensor& b_csr);

// The multiply count as the planner takes it: exact (spgemm_flops) where that is cheap next to
// the product (A of at most kExactFlopsEntries entries or too few rows to sample), or where
// `exact_needed` (a memory cap: the count decides what fits); else estimated from the sample
// blocks of A's rows as (their multiplies / their entries) * nnz(A), exact again when the
// blocks hold fewer than kMinSampleEntries entries. On luxembourg the exact count was 84 us,
// 2.3% of the product alone.
struct FlopsCount {
  double flops = 0;
  int64_t sampled_rows = 0;  // 0: exact
};
inline constexpr int64_t kExactFlopsEntries = 65536, kMinSampleEntries = 1024;
FlopsCount spgemm_flops_for_planning(const Tensor& a_csr, const Tensor& b_csr, bool exact_needed);
// The same over A's n coordinates and B's row positions (one typed loop: a per-entry switch on
// the coordinate type kept it from unrolling).
template <class I> int64_t multiply_count(const I* a_crd, int64_t n, const int64_t* b_pos) {
  int64_t flops = 0;
  for (int64_t p = 0; p < n; ++p) flops += b_pos[a_crd[p] + 1] - b_pos[a_crd[p]];
  return flops;
}

void write_json(JsonWriter& w, const MatrixStats& s);

}  // namespace sj
