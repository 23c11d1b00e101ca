// What the opaque C handles hold. A context counts the tensors and plans made with it so
// that destroying it early is refused instead of leaving them dangling.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "absl/base/call_once.h"
#include "capi/spare_handle.hpp"
#include "src/context.hpp"
#include "src/einsum_planner.hpp"
#include "src/plan.hpp"
#include "src/tensor.hpp"

struct sj_context {
  std::unique_ptr<sj::Context> impl;
  std::atomic<int64_t> live_tensors{0};
  std::atomic<int64_t> live_plans{0};
};

struct sj_tensor {
  sj_context* ctx = nullptr;
  // t.derived (the forms and facts kept for repeated calls) is made at the handle's first use
  // as an operand (sj::capi::operand_of), not with the handle: most results are never
  // operands, and its allocation and destruction were ~350 of the ~2,300 instructions of a
  // tiny SpMSpV through a plan.
  sj::Tensor t;
  absl::once_flag derived_once;
};

struct sj_plan {
  sj_context* ctx = nullptr;
  std::unique_ptr<sj::Plan> plan;
  std::unique_ptr<sj::einsum::EinsumPlan> einsum;  // set instead of `plan` by sj_einsum_plan
  std::mutex explain_mutex;
  std::string explain_text;   // JSON
  std::string explain_plain;  // readable text
};

namespace sj::capi {

// Wraps a finished tensor in a new handle (the only way tensors leave the library).
sj_tensor* new_tensor_handle(sj_context* ctx, Tensor&& t);
// Counts a filled handle as live and hands it out.
sj_tensor* publish_tensor_handle(std::unique_ptr<sj_tensor> h);
// The handle's tensor as operand i of a call in `ctx`, with its derived-forms store (made once,
// at the first such use, whichever thread gets there first; every caller then sees the same
// store). A handle of another context is refused (SJ_ERR_INVALID_ARGUMENT).
const Tensor& operand_of(const sj_context* ctx, const sj_tensor* h, int i);
// A new handle whose tensor `fill(Tensor&)` makes in place (no move of the finished tensor:
// see init_sparse_vector); nothing is left behind when fill throws. The handle is the
// thread's kept one when it has one (capi/spare_handle.hpp): `fill` then finds a kept result
// in the tensor, which it replaces or refills.
template <class Fill> sj_tensor* make_tensor_handle(sj_context* ctx, Fill&& fill) {
  std::unique_ptr<sj_tensor> h(take_spare_handle(ctx));
  if (!h) h = std::make_unique<sj_tensor>();
  h->ctx = ctx;
  fill(h->t);
  return publish_tensor_handle(std::move(h));
}

// The caller's options, checked and normalised: equal settings give equal bytes (the drop-in
// memo compares them whole, src/plan_memo.cpp). The option values themselves are checked
// later, with the request (check_options in src/operation.hpp).
sj_op_options read_options(const sj_op_options* o);
// The caller's operand handles as a list that borrows their tensors (n from 0 to 3; NULL
// pointers refused with SJ_ERR_NULL_POINTER naming the operand, handles of another context
// than ctx with SJ_ERR_INVALID_ARGUMENT).
OperandList borrow_operands(const sj_context* ctx, const sj_tensor* const* operands, int n);
// Executes an index-notation plan (capi/capi_einsum.cpp); returns the new result handle.
sj_tensor* execute_einsum(sj_plan* plan, const sj_tensor* const* operands, int n);

}  // namespace sj::capi
