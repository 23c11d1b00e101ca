// Reference element-wise operations on two compressed matrices of the same orientation and
// shape (CSR with CSR, or CSC with CSC; the kernels only see segments). Each segment pair is
// merged with two fingers, so output coordinates stay sorted. A is always the left operand:
// mul(a, b) and add(a, b), never the reverse.
#pragma once
#include <cstdint>

#include "kernels/reference_common.hpp"
#include "src/tensor.hpp"

namespace sj::ref {

namespace detail {
inline void require_same_shape(int64_t ao, int64_t ai, int64_t bo, int64_t bi,
                               const char* op) {
  require_shape(ao == bo && ai == bi, op, ": operands are ", ao, "x", ai, " and ", bo, "x",
                bi);
}
}  // namespace detail

// Intersection: C(i,j) = mul(A(i,j), B(i,j)) where both are stored.
template <class S, class I, class V>
CsResult<I, V> ewise_mult(const CsView<I, V>& A, const CsView<I, V>& B) {
  detail::require_same_shape(A.outer, A.inner, B.outer, B.inner, "ewise_mult");
  CsResult<I, V> C;
  C.outer = A.outer;
  C.inner = A.inner;
  C.pos.assign(detail::vector_size<int64_t>(detail::checked_add(A.outer, 1, "ewise rows"),
                                            "ewise pointers"),
               0);
  for (int64_t s = 0; s < A.outer; ++s) {
    int64_t pa = A.pos[s], pb = B.pos[s];
    const int64_t ea = A.pos[s + 1], eb = B.pos[s + 1];
    while (pa < ea && pb < eb) {
      if (A.crd[pa] < B.crd[pb]) {
        ++pa;
      } else if (B.crd[pb] < A.crd[pa]) {
        ++pb;
      } else {
        C.crd.push_back(A.crd[pa]);
        C.val.push_back(S::mul(A.val[pa], B.val[pb]));
        ++pa;
        ++pb;
      }
    }
    C.pos[s + 1] = static_cast<int64_t>(C.crd.size());
  }
  return C;
}

// Union: C(i,j) = add(A(i,j), B(i,j)) where both are stored, else the one stored value.
template <class S, class I, class V>
CsResult<I, V> ewise_add(const CsView<I, V>& A, const CsView<I, V>& B) {
  detail::require_same_shape(A.outer, A.inner, B.outer, B.inner, "ewise_add");
  detail::checked_add(A.nnz(), B.nnz(), "ewise_add output nnz");
  CsResult<I, V> C;
  C.outer = A.outer;
  C.inner = A.inner;
  C.pos.assign(detail::vector_size<int64_t>(detail::checked_add(A.outer, 1, "ewise rows"),
                                            "ewise pointers"),
               0);
  for (int64_t s = 0; s < A.outer; ++s) {
    int64_t pa = A.pos[s], pb = B.pos[s];
    const int64_t ea = A.pos[s + 1], eb = B.pos[s + 1];
    while (pa < ea || pb < eb) {
      if (pb == eb || (pa < ea && A.crd[pa] < B.crd[pb])) {
        C.crd.push_back(A.crd[pa]);
        C.val.push_back(A.val[pa]);
        ++pa;
      } else if (pa == ea || B.crd[pb] < A.crd[pa]) {
        C.crd.push_back(B.crd[pb]);
        C.val.push_back(B.val[pb]);
        ++pb;
      } else {
        C.crd.push_back(A.crd[pa]);
        C.val.push_back(S::add(A.val[pa], B.val[pb]));
        ++pa;
        ++pb;
      }
    }
    C.pos[s + 1] = static_cast<int64_t>(C.crd.size());
  }
  return C;
}

}  // namespace sj::ref
