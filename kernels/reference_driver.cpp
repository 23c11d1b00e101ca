#include "kernels/reference_driver.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/reference.hpp"
#include "src/convert.hpp"
#include "src/dispatch.hpp"
#include "src/error.hpp"
#include "src/semiring.hpp"

namespace sj {
namespace {

// The reference kernels build their results in std::vector and use workspaces sized by a
// dimension; neither goes through the allocator, so the memory cap is charged here, before
// the kernel runs (the copy to the caller's arrays meets the cap again when it allocates).

// Sparse SpGEMM: at most min(products, columns) entries per row. When that bound is over the
// cap, the exact count (a symbolic pass over the same columns the kernel visits) decides.
template <class I, class V>
void charge_spgemm_output(const CsView<I, V>& A, const CsView<I, V>& B, const Allocator& alloc) {
  if (alloc.memory_cap() == 0 || A.inner != B.outer) return;  // a shape error is the kernel's to report
  const size_t entry = sizeof(I) + sizeof(V);
  const size_t pos_bytes = estimate_bytes(A.outer + 1, sizeof(int64_t));
  int64_t bound = 0;
  for (int64_t i = 0; i < A.outer; ++i) {
    int64_t f = 0;
    for (int64_t pa = A.pos[i]; pa < A.pos[i + 1]; ++pa) f += B.pos[A.crd[pa] + 1] - B.pos[A.crd[pa]];
    if (__builtin_add_overflow(bound, std::min(f, B.inner), &bound)) bound = INT64_MAX;
  }
  if (!alloc.over_cap(estimate_bytes(bound, entry, pos_bytes))) return;
  std::vector<int64_t> seen(static_cast<size_t>(B.inner), -1);  // charged by the caller
  int64_t nnz = 0;
  for (int64_t i = 0; i < A.outer; ++i)
    for (int64_t pa = A.pos[i]; pa < A.pos[i + 1]; ++pa)
      for (int64_t pb = B.pos[A.crd[pa]]; pb < B.pos[A.crd[pa] + 1]; ++pb)
        if (seen[B.crd[pb]] != i) seen[B.crd[pb]] = i, ++nnz;
  alloc.charge(estimate_bytes(nnz, entry, pos_bytes),
               cat("spgemm output (", A.outer, "x", B.inner, ", ", nnz, " entries by a symbolic count)"));
}

template <class S, class I, class V>
Tensor run_typed(const OpRequest& req, const PreparedOperands& p, const Allocator& alloc) {
  const auto& ops = p.operands;
  const ValueType vt = p.value_type;
  const bool dense = req.options.dense_output != 0;
  switch (req.op) {
    case SJ_OP_SPGEMM: {
      auto A = cs_view<I, V>(ops[0]);
      auto B = cs_view<I, V>(ops[1]);
      // The accumulator: a value and a row stamp per column of B (the dense form a stamp only).
      alloc.charge(estimate_bytes(B.inner, dense ? sizeof(int64_t) : sizeof(V) + sizeof(int64_t)),
                   cat("spgemm reference accumulator (B has ", B.inner, " columns)"));
      if (dense) {
        int64_t dims[2] = {A.outer, B.inner};
        Tensor C = make_dense(alloc, 2, dims, vt);
        ref::spgemm_dense<S>(A, B, C.values.as_mut<V>());
        return C;
      }
      charge_spgemm_output(A, B, alloc);
      return to_tensor(alloc, true, ref::spgemm<S>(A, B), vt);
    }
    case SJ_OP_SPGEMM_MASKED: {
      // Only the mask's structure matters; its values may be of any type.
      CsView<I, uint8_t> M;
      M.outer = ops[0].dims[0];
      M.inner = ops[0].dims[1];
      M.pos = ops[0].levels[1].pos.as<int64_t>();
      M.crd = ops[0].levels[1].crd.as<I>();
      // A value and two row stamps per column; the result has at most nnz(M) entries (with
      // the mask complemented, at most the unmasked product's: counted like it).
      alloc.charge(estimate_bytes(M.inner, sizeof(V) + 2 * sizeof(int64_t)),
                   cat("masked spgemm reference accumulator (B has ", M.inner, " columns)"));
      const bool complement = req.options.mask_complement != 0;
      if (complement) charge_spgemm_output(cs_view<I, V>(ops[1]), cs_view<I, V>(ops[2]), alloc);
      return to_tensor(alloc, true,
                       ref::masked_spgemm<S>(M, cs_view<I, V>(ops[1]), cs_view<I, V>(ops[2]), complement), vt);
    }
    case SJ_OP_SPMSPV: {
      auto A = cs_view<I, V>(ops[0]);
      auto x = spvec_view<I, V>(ops[1]);
      alloc.charge(estimate_bytes(x.n, sizeof(V) + 1), cat("spmspv reference workspace (x has length ", x.n, ")"));
      if (dense) {
        Tensor y = make_dense(alloc, 1, &A.outer, vt);
        ref::spmspv_dense<S>(A, x, y.values.as_mut<V>());
        return y;
      }
      return to_tensor(alloc, ref::spmspv<S>(A, x), vt);
    }
    case SJ_OP_SPMV: {
      auto A = cs_view<I, V>(ops[0]);
      Tensor y = make_dense(alloc, 1, &A.outer, vt);
      ref::spmv<S>(A, ops[1].values.as<V>(), y.values.as_mut<V>());
      return y;
    }
    case SJ_OP_EWISE_MULT:
      return to_tensor(alloc, true, ref::ewise_mult<S>(cs_view<I, V>(ops[0]), cs_view<I, V>(ops[1])), vt);
    case SJ_OP_EWISE_ADD:
      return to_tensor(alloc, true, ref::ewise_add<S>(cs_view<I, V>(ops[0]), cs_view<I, V>(ops[1])), vt);
    case SJ_OP_TRANSPOSE:
      return transpose(ops[0], alloc);
  }
  fail(SJ_ERR_INTERNAL, "run_reference: unknown operation");
}

}  // namespace

Tensor run_reference(const OpRequest& req, const PreparedOperands& p, const Allocator& alloc) {
  const PreparedOperands q = with_transposed_b(req, p, alloc);
  return with_kernel_types(q.index_type, q.value_type, req.options.semiring, [&](auto s, auto i, auto v) {
    return run_typed<decltype(s), decltype(i), decltype(v)>(req, q, alloc);
  });
}

}  // namespace sj
