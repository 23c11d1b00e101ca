#include "kernels/reference_driver.hpp"

#include "kernels/reference.hpp"
#include "src/convert.hpp"
#include "src/dispatch.hpp"
#include "src/error.hpp"
#include "src/semiring.hpp"

namespace sj {
namespace {

template <class S, class I, class V>
Tensor run_typed(const OpRequest& req, const PreparedOperands& p, const Allocator& alloc) {
  const auto& ops = p.operands;
  const ValueType vt = p.value_type;
  const bool dense = req.options.dense_output != 0;
  switch (req.op) {
    case SJ_OP_SPGEMM: {
      auto A = cs_view<I, V>(ops[0]);
      auto B = cs_view<I, V>(ops[1]);
      if (dense) {
        int64_t dims[2] = {A.outer, B.inner};
        Tensor C = make_dense(alloc, 2, dims, vt);
        ref::spgemm_dense<S>(A, B, C.values.as_mut<V>());
        return C;
      }
      return to_tensor(alloc, true, ref::spgemm<S>(A, B), vt);
    }
    case SJ_OP_SPGEMM_MASKED: {
      // Only the mask's structure matters; its values may be of any type.
      CsView<I, uint8_t> M;
      M.outer = ops[0].dims[0];
      M.inner = ops[0].dims[1];
      M.pos = ops[0].levels[1].pos.as<int64_t>();
      M.crd = ops[0].levels[1].crd.as<I>();
      return to_tensor(alloc, true, ref::masked_spgemm<S>(M, cs_view<I, V>(ops[1]), cs_view<I, V>(ops[2])), vt);
    }
    case SJ_OP_SPMSPV: {
      auto A = cs_view<I, V>(ops[0]);
      auto x = spvec_view<I, V>(ops[1]);
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
