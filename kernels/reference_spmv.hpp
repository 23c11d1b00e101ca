// Reference SpMV, y(i) = sum_j A(i,j) * x(j) with A CSR and x, y dense. Each row is summed
// in increasing j starting from its first product; an empty row gives zero().
#pragma once
#include <cstdint>

#include "src/tensor.hpp"

namespace sj::ref {

// x has A.inner elements, y has A.outer; the kernel sets every y(i).
template <class S, class I, class V>
void spmv(const CsView<I, V>& A, const V* x, V* y) {
  for (int64_t i = 0; i < A.outer; ++i) {
    const int64_t begin = A.pos[i], end = A.pos[i + 1];
    if (begin == end) {
      y[i] = S::zero();
      continue;
    }
    V acc = S::mul(A.val[begin], x[A.crd[begin]]);
    for (int64_t p = begin + 1; p < end; ++p) acc = S::add(acc, S::mul(A.val[p], x[A.crd[p]]));
    y[i] = acc;
  }
}

}  // namespace sj::ref
