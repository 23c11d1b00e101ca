// Reference SpMSpV, y(i) = sum_j A(i,j) * x(j) with A CSR and x a sparse vector: x is
// scattered into a dense workspace once, then each row of A gathers from it in increasing
// j (the contracted coordinate), as the exactness contract requires.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/reference_common.hpp"
#include "src/tensor.hpp"

namespace sj::ref {

namespace detail {
// Calls emit(i, y_i) for every row i of A with at least one product, in increasing i.
template <class S, class I, class V, class Emit>
void spmspv_rows(const CsView<I, V>& A, const SpVecView<I, V>& x, Emit&& emit) {
  require_shape(A.inner == x.n, "spmspv: A is ", A.outer, "x", A.inner, " but x has length ",
                x.n);
  std::vector<V> xv(vector_size<V>(x.n, "spmspv workspace"));
  std::vector<uint8_t> has(xv.size(), 0);
  for (int64_t p = 0; p < x.nnz; ++p) {
    xv[x.idx[p]] = x.val[p];
    has[x.idx[p]] = 1;
  }
  for (int64_t i = 0; i < A.outer; ++i) {
    bool any = false;
    V acc{};
    for (int64_t p = A.pos[i]; p < A.pos[i + 1]; ++p) {
      const int64_t j = A.crd[p];
      if (!has[j]) continue;
      const V prod = S::mul(A.val[p], xv[j]);
      acc = any ? S::add(acc, prod) : prod;
      any = true;
    }
    if (any) emit(i, acc);
  }
}
}  // namespace detail

// Sparse result with sorted indices; y(i) is stored iff some A(i,j) meets a stored x(j).
template <class S, class I, class V>
SpVecResult<I, V> spmspv(const CsView<I, V>& A, const SpVecView<I, V>& x) {
  SpVecResult<I, V> y;
  y.n = A.outer;
  detail::spmspv_rows<S>(A, x, [&](int64_t i, V v) {
    y.idx.push_back(static_cast<I>(i));
    y.val.push_back(v);
  });
  return y;
}

// Dense result of length A.outer; zero() where no product formed.
template <class S, class I, class V>
void spmspv_dense(const CsView<I, V>& A, const SpVecView<I, V>& x, V* y) {
  detail::require_shape(A.inner == x.n, "spmspv: A is ", A.outer, "x", A.inner,
                        " but x has length ", x.n);
  std::fill_n(y, A.outer, S::zero());
  detail::spmspv_rows<S>(A, x, [&](int64_t i, V v) { y[i] = v; });
}

}  // namespace sj::ref
