// Drop-in operations and plans. A drop-in call is a plan made and executed once; both paths
// share the checks, the planner and the kernels.
#include <cstring>

#include "capi/boundary.hpp"
#include "capi/handles.hpp"
#include "src/convert.hpp"
#include "src/plan_memo.hpp"

namespace sj::capi {

OperandList borrow_operands(const sj_context* ctx, const sj_tensor* const* operands, int n) {
  if (n < 0 || n > 3) fail(SJ_ERR_INVALID_ARGUMENT, "n_operands is ", n);
  if (n > 0) require(operands, "operands");
  OperandList ops;
  for (int i = 0; i < n; ++i) {
    if (!operands[i]) fail(SJ_ERR_NULL_POINTER, "operand ", i, " is NULL");
    ops.borrow(operand_of(ctx, operands[i], i));  // the handles outlive the call
  }
  return ops;
}

sj_op_options read_options(const sj_op_options* o) {
  sj_op_options r = default_options();
  if (!o) return r;
  if (o->struct_size == 0 || o->struct_size > sizeof(sj_op_options))
    fail(SJ_ERR_INVALID_ARGUMENT, "options.struct_size is ", o->struct_size,
         " (initialise the options with sj_op_options_init)");
  std::memcpy(&r, o, o->struct_size);
  if (std::memchr(r.phases, '\0', sizeof r.phases) == nullptr)
    fail(SJ_ERR_INVALID_ARGUMENT, "options.phases is not NUL-terminated");
  if (r.threads < 0) fail(SJ_ERR_INVALID_ARGUMENT, "options.threads is negative (", r.threads, ")");
  if (r.vector_width < 0) fail(SJ_ERR_INVALID_ARGUMENT, "options.vector_width is negative (", r.vector_width, ")");
  r.struct_size = sizeof r;
  const size_t phases_len = std::strlen(r.phases);
  std::memset(r.phases + phases_len, 0, sizeof r.phases - phases_len);
  for (int* flag : {&r.dense_output, &r.transpose_a, &r.transpose_b, &r.calibrate, &r.recompute_structure,
                    &r.mask_complement})
    *flag = *flag != 0;  // yes/no settings: any nonzero value means yes
  return r;
}

namespace {

OpRequest make_request(sj_context* ctx, sj_op op, const sj_tensor* const* operands, int n,
                       const sj_op_options* options) {
  require(ctx, "ctx");
  OpRequest r;
  r.op = op;
  r.options = read_options(options);
  r.operands = borrow_operands(ctx, operands, n);
  return r;
}

sj_status run_once(sj_context* ctx, sj_op op, std::initializer_list<const sj_tensor*> operands,
                   const sj_op_options* options, sj_tensor** out) {
  return guarded([&] {
    require(out, "result");
    require(ctx, "ctx");
    const sj_op_options opts = read_options(options);
    const OperandList ops = borrow_operands(ctx, operands.begin(), static_cast<int>(operands.size()));
    // Repeated operands reuse the plan made for them (src/plan_memo.hpp).
    std::shared_ptr<Plan> plan = plan_for_dropin(*ctx->impl, op, ops, opts);
    *out = make_tensor_handle(ctx, [&](Tensor& result) { plan->execute(ops, result); });
  });
}

}  // namespace
}  // namespace sj::capi

using namespace sj;
using sj::capi::guarded;
using sj::capi::require;

extern "C" {

SJ_API sj_status sj_spgemm(sj_context* ctx, const sj_tensor* A, const sj_tensor* B, const sj_op_options* o, sj_tensor** C) {
  return capi::run_once(ctx, SJ_OP_SPGEMM, {A, B}, o, C);
}
SJ_API sj_status sj_spgemm_masked(sj_context* ctx, const sj_tensor* M, const sj_tensor* A, const sj_tensor* B,
                                  const sj_op_options* o, sj_tensor** C) {
  return capi::run_once(ctx, SJ_OP_SPGEMM_MASKED, {M, A, B}, o, C);
}
SJ_API sj_status sj_spmspv(sj_context* ctx, const sj_tensor* A, const sj_tensor* x, const sj_op_options* o, sj_tensor** y) {
  return capi::run_once(ctx, SJ_OP_SPMSPV, {A, x}, o, y);
}
SJ_API sj_status sj_spmv(sj_context* ctx, const sj_tensor* A, const sj_tensor* x, const sj_op_options* o, sj_tensor** y) {
  return capi::run_once(ctx, SJ_OP_SPMV, {A, x}, o, y);
}
SJ_API sj_status sj_ewise_mult(sj_context* ctx, const sj_tensor* A, const sj_tensor* B, const sj_op_options* o, sj_tensor** C) {
  return capi::run_once(ctx, SJ_OP_EWISE_MULT, {A, B}, o, C);
}
SJ_API sj_status sj_ewise_add(sj_context* ctx, const sj_tensor* A, const sj_tensor* B, const sj_op_options* o, sj_tensor** C) {
  return capi::run_once(ctx, SJ_OP_EWISE_ADD, {A, B}, o, C);
}
SJ_API sj_status sj_transpose(sj_context* ctx, const sj_tensor* A, sj_tensor** C) {
  return capi::run_once(ctx, SJ_OP_TRANSPOSE, {A}, nullptr, C);
}

SJ_API sj_status sj_plan_create(sj_context* ctx, sj_op op, const sj_tensor* const* operands, int n,
                                const sj_op_options* options, sj_plan** out) {
  return guarded([&] {
    require(out, "out");
    OpRequest req = capi::make_request(ctx, op, operands, n, options);
    req.repeated = true;
    auto plan = std::make_unique<sj_plan>();
    plan->ctx = ctx;
    plan->plan = std::make_unique<Plan>(*ctx->impl, std::move(req));
    ++ctx->live_plans;
    *out = plan.release();
  });
}

SJ_API sj_status sj_plan_execute(sj_plan* plan, const sj_tensor* const* operands, int n, sj_tensor** result) {
  return guarded([&] {
    require(plan, "plan");
    require(result, "result");
    if (plan->einsum) {  // index-notation plans (capi/capi_einsum.cpp)
      *result = capi::execute_einsum(plan, operands, n);
      return;
    }
    const OperandList ops = capi::borrow_operands(plan->ctx, operands, n);
    *result = capi::make_tensor_handle(plan->ctx, [&](Tensor& out) { plan->plan->execute(ops, out); });
  });
}

SJ_API sj_status sj_plan_explain(sj_plan* plan, const char** json) {
  return guarded([&] {
    require(plan, "plan");
    require(json, "json");
    std::lock_guard lock(plan->explain_mutex);
    plan->explain_text = plan->einsum ? plan->einsum->explain() : plan->plan->explain();
    *json = plan->explain_text.c_str();
  });
}

SJ_API sj_status sj_plan_explain_text(sj_plan* plan, const char** text) {
  return guarded([&] {
    require(plan, "plan");
    require(text, "text");
    std::lock_guard lock(plan->explain_mutex);
    plan->explain_plain = plan->einsum ? plan->einsum->explain_text() : plan->plan->explain_text();
    *text = plan->explain_plain.c_str();
  });
}

SJ_API sj_status sj_plan_destroy(sj_plan* plan) {
  return guarded([&] {
    if (!plan) return;
    --plan->ctx->live_plans;
    delete plan;
  });
}

}  // extern "C"
