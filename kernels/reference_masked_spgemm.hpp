// Reference masked SpGEMM, C<M>(i,j) = sum_k A(i,k) * B(k,j) only where M(i,j) is stored
// (M's values are ignored); with `complement`, C<!M>: only where M(i,j) is NOT stored.
// Gustavson as in reference_spgemm.hpp, but products the mask rules out are dropped before
// they reach the accumulator.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/reference_common.hpp"
#include "src/tensor.hpp"

namespace sj::ref {

// (i,j) is stored iff M(i,j) is stored (complement: is not) and at least one product
// A(i,k)B(k,j) formed. Columns come out in the mask row's order, which is sorted (complement:
// the products' columns, sorted).
template <class S, class I, class V, class MV>
CsResult<I, V> masked_spgemm(const CsView<I, MV>& M, const CsView<I, V>& A,
                             const CsView<I, V>& B, bool complement = false) {
  detail::require_shape(A.inner == B.outer, "masked spgemm: A is ", A.outer, "x", A.inner,
                        " but B is ", B.outer, "x", B.inner);
  detail::require_shape(M.outer == A.outer && M.inner == B.inner, "masked spgemm: mask is ",
                        M.outer, "x", M.inner, " but A*B is ", A.outer, "x", B.inner);
  const int64_t rows = A.outer, cols = B.inner;
  CsResult<I, V> C;
  C.outer = rows;
  C.inner = cols;
  C.pos.assign(detail::vector_size<int64_t>(detail::checked_add(rows, 1, "spgemm rows"),
                                            "spgemm row pointers"),
               0);
  std::vector<V> acc(detail::vector_size<V>(cols, "spgemm accumulator"));
  std::vector<int64_t> allowed(acc.size(), -1);  // allowed[j] == i: M(i,j) is stored
  std::vector<int64_t> seen(acc.size(), -1);     // seen[j] == i: acc[j] holds a product
  std::vector<int64_t> cols_seen;  // complement: the row's columns, in first-product order
  for (int64_t i = 0; i < rows; ++i) {
    if (M.pos[i] == M.pos[i + 1] && !complement) {  // nothing can be stored in this row
      C.pos[i + 1] = C.pos[i];
      continue;
    }
    for (int64_t pm = M.pos[i]; pm < M.pos[i + 1]; ++pm) allowed[M.crd[pm]] = i;
    for (int64_t pa = A.pos[i]; pa < A.pos[i + 1]; ++pa) {
      const int64_t k = A.crd[pa];
      for (int64_t pb = B.pos[k]; pb < B.pos[k + 1]; ++pb) {
        const int64_t j = B.crd[pb];
        if ((allowed[j] == i) == complement) continue;
        const V p = S::mul(A.val[pa], B.val[pb]);
        if (seen[j] != i) {
          seen[j] = i;
          acc[j] = p;
          if (complement) cols_seen.push_back(j);
        } else {
          acc[j] = S::add(acc[j], p);
        }
      }
    }
    int64_t count = 0;
    if (complement) {
      std::sort(cols_seen.begin(), cols_seen.end());
      for (int64_t j : cols_seen) {
        C.crd.push_back(static_cast<I>(j));
        C.val.push_back(acc[j]);
      }
      count = static_cast<int64_t>(cols_seen.size());
      cols_seen.clear();
    }
    for (int64_t pm = M.pos[i]; pm < M.pos[i + 1] && !complement; ++pm) {
      const int64_t j = M.crd[pm];
      if (seen[j] != i) continue;
      C.crd.push_back(M.crd[pm]);
      C.val.push_back(acc[j]);
      ++count;
    }
    C.pos[i + 1] = detail::checked_add(C.pos[i], count, "masked spgemm output nnz");
  }
  return C;
}

}  // namespace sj::ref
