// Reference SpGEMM, C(i,j) = sum_k A(i,k) * B(k,j), both operands CSR: Gustavson row by
// row with a dense accumulator. Rows of A are walked in increasing k, so the products of
// each C(i,j) arrive in increasing k, as the exactness contract (reference.hpp) requires.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/reference_common.hpp"
#include "src/tensor.hpp"

namespace sj::ref {

// Sparse CSR result with sorted columns; (i,j) is stored iff at least one product formed.
template <class S, class I, class V>
CsResult<I, V> spgemm(const CsView<I, V>& A, const CsView<I, V>& B) {
  detail::require_shape(A.inner == B.outer, "spgemm: A is ", A.outer, "x", A.inner,
                        " but B is ", B.outer, "x", B.inner);
  const int64_t rows = A.outer, cols = B.inner;
  CsResult<I, V> C;
  C.outer = rows;
  C.inner = cols;
  C.pos.assign(detail::vector_size<int64_t>(detail::checked_add(rows, 1, "spgemm rows"),
                                            "spgemm row pointers"),
               0);
  std::vector<V> acc(detail::vector_size<V>(cols, "spgemm accumulator"));
  // seen[j] == i: column j already holds a product of row i (no clearing between rows).
  std::vector<int64_t> seen(acc.size(), -1);
  std::vector<I> touched;  // columns of row i, in order of first product
  for (int64_t i = 0; i < rows; ++i) {
    touched.clear();
    for (int64_t pa = A.pos[i]; pa < A.pos[i + 1]; ++pa) {
      const int64_t k = A.crd[pa];
      for (int64_t pb = B.pos[k]; pb < B.pos[k + 1]; ++pb) {
        const int64_t j = B.crd[pb];
        const V p = S::mul(A.val[pa], B.val[pb]);
        if (seen[j] != i) {
          seen[j] = i;
          acc[j] = p;  // start from the first product, never from zero()
          touched.push_back(B.crd[pb]);
        } else {
          acc[j] = S::add(acc[j], p);
        }
      }
    }
    std::sort(touched.begin(), touched.end());
    for (I j : touched) {
      C.crd.push_back(j);
      C.val.push_back(acc[j]);
    }
    C.pos[i + 1] = detail::checked_add(C.pos[i], static_cast<int64_t>(touched.size()),
                                       "spgemm output nnz");
  }
  return C;
}

// Dense row-major result, rows x cols of A.outer x B.inner; the kernel sets every element:
// zero() where no product formed, else the contracted sum.
template <class S, class I, class V>
void spgemm_dense(const CsView<I, V>& A, const CsView<I, V>& B, V* C) {
  detail::require_shape(A.inner == B.outer, "spgemm: A is ", A.outer, "x", A.inner,
                        " but B is ", B.outer, "x", B.inner);
  const int64_t rows = A.outer, cols = B.inner;
  const int64_t total = detail::checked_mul(rows, cols, "spgemm dense output");
  std::fill_n(C, total, S::zero());
  std::vector<int64_t> seen(detail::vector_size<int64_t>(cols, "spgemm accumulator"), -1);
  for (int64_t i = 0; i < rows; ++i) {
    V* Ci = C + i * cols;
    for (int64_t pa = A.pos[i]; pa < A.pos[i + 1]; ++pa) {
      const int64_t k = A.crd[pa];
      for (int64_t pb = B.pos[k]; pb < B.pos[k + 1]; ++pb) {
        const int64_t j = B.crd[pb];
        const V p = S::mul(A.val[pa], B.val[pb]);
        if (seen[j] != i) {
          seen[j] = i;
          Ci[j] = p;
        } else {
          Ci[j] = S::add(Ci[j], p);
        }
      }
    }
  }
}

}  // namespace sj::ref
