// The inspector: cheap sparsity statistics of an operand (O(rows), no pass over nnz except
// where said), which the planner uses to choose and explain prints.
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
};

// Statistics of a CSR matrix (pass CSR; use as_csr for other formats).
MatrixStats matrix_stats(const Tensor& csr, bool with_bandwidth = true);

// Statistics of the transpose of a CSR matrix (its column lengths), without transposing:
// one pass over the coordinates. For deferred transposes (element-wise B^T).
MatrixStats transpose_stats(const Tensor& csr);

// Exact multiply count of the Gustavson SpGEMM A*B (A, B CSR): sum over A's entries (i,k)
// of nnz(B row k). O(nnz(A)).
int64_t spgemm_flops(const Tensor& a_csr, const Tensor& b_csr);
// The same over A's n coordinates and B's row positions (one typed loop: a per-entry switch on
// the coordinate type kept it from unrolling).
template <class I> int64_t multiply_count(const I* a_crd, int64_t n, const int64_t* b_pos) {
  int64_t flops = 0;
  for (int64_t p = 0; p < n; ++p) flops += b_pos[a_crd[p] + 1] - b_pos[a_crd[p]];
  return flops;
}

void write_json(JsonWriter& w, const MatrixStats& s);

}  // namespace sj
