// Reference transpose: the same matrix in the other orientation (CSR arrays in, CSC arrays
// out, which are also the CSR arrays of the transpose). Counting sort by inner coordinate;
// segments are visited in increasing order, so each output segment comes out sorted.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/reference_common.hpp"
#include "src/tensor.hpp"

namespace sj::ref {

// Output coordinates are A's outer indices; that they fit I is the caller's concern.
template <class I, class V> CsResult<I, V> transpose(const CsView<I, V>& A) {
  const int64_t nnz = A.nnz();
  CsResult<I, V> T;
  T.outer = A.inner;
  T.inner = A.outer;
  T.pos.assign(detail::vector_size<int64_t>(detail::checked_add(A.inner, 1, "transpose"),
                                            "transpose pointers"),
               0);
  for (int64_t p = 0; p < nnz; ++p) ++T.pos[static_cast<int64_t>(A.crd[p]) + 1];
  for (int64_t c = 0; c < A.inner; ++c) T.pos[c + 1] += T.pos[c];
  T.crd.resize(detail::vector_size<I>(nnz, "transpose nnz"));
  T.val.resize(T.crd.size());
  std::vector<int64_t> next(T.pos.begin(), T.pos.end() - 1);  // next free slot per segment
  for (int64_t s = 0; s < A.outer; ++s) {
    for (int64_t p = A.pos[s]; p < A.pos[s + 1]; ++p) {
      const int64_t dst = next[A.crd[p]]++;
      T.crd[dst] = static_cast<I>(s);
      T.val[dst] = A.val[p];
    }
  }
  return T;
}

}  // namespace sj::ref
