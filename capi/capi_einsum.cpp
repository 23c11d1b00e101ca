// The index-notation calls: sj_einsum_plan / sj_einsum. The plan lives in the same sj_plan
// handle as the drop-in operations (sj_plan_execute / explain / destroy serve both).

#include "capi/boundary.hpp"
#include "capi/handles.hpp"
#include "jit/llvm_backend.hpp"
#include "src/operation.hpp"

namespace sj::capi {
namespace {

constexpr int kMaxEinsumOperands = 16;

sj_op_options einsum_options(const sj_op_options* o) {
  const sj_op_options r = read_options(o);  // as the operations read them
  check_options(r);
  if (r.mask_complement) fail(SJ_ERR_INVALID_ARGUMENT, "einsum: mask_complement applies to spgemm-masked only");
  return r;
}

std::vector<Tensor> operand_list(const sj_context* ctx, const sj_tensor* const* operands, int n) {
  if (n < 0 || n > kMaxEinsumOperands) fail(SJ_ERR_INVALID_ARGUMENT, "n_operands is ", n, " (0 to ", kMaxEinsumOperands, ")");
  if (n > 0) require(operands, "operands");
  std::vector<Tensor> out;
  for (int i = 0; i < n; ++i) {
    if (!operands[i]) fail(SJ_ERR_NULL_POINTER, "operand ", i, " is NULL");
    out.push_back(operand_of(ctx, operands[i], i));
  }
  return out;
}

std::unique_ptr<einsum::EinsumPlan> make_plan(sj_context* ctx, const char* expression, const sj_tensor* const* operands,
                                              int n, const char* const* formats, const char* output_format,
                                              const sj_op_options* options) {
  require(ctx, "ctx");
  require(expression, "expression");
  std::vector<Tensor> ops = operand_list(ctx, operands, n);
  std::vector<std::optional<std::string>> fmts;
  if (formats)
    for (int i = 0; i < n; ++i) fmts.push_back(formats[i] ? std::optional<std::string>(formats[i]) : std::nullopt);
  std::optional<std::string> out_fmt;
  if (output_format) out_fmt = output_format;
  return std::make_unique<einsum::EinsumPlan>(*ctx->impl, expression, ops, fmts, out_fmt, einsum_options(options));
}

}  // namespace

sj_tensor* execute_einsum(sj_plan* plan, const sj_tensor* const* operands, int n) {
  Tensor out = plan->einsum->execute(operand_list(plan->ctx, operands, n));
  return new_tensor_handle(plan->ctx, std::move(out));
}

}  // namespace sj::capi

using namespace sj;
using sj::capi::guarded;
using sj::capi::require;

extern "C" {

SJ_API sj_status sj_einsum_plan(sj_context* ctx, const char* expression, const sj_tensor* const* operands, int n,
                                const char* const* formats, const char* output_format, const sj_op_options* options,
                                sj_plan** out) {
  return guarded([&] {
    require(out, "out");
    auto plan = std::make_unique<sj_plan>();
    plan->ctx = ctx;
    plan->einsum = capi::make_plan(ctx, expression, operands, n, formats, output_format, options);
    ++ctx->live_plans;
    *out = plan.release();
  });
}

SJ_API sj_status sj_einsum_backend_load(void) {
  return guarded([] {
    std::string why;
    if (!jit::load_llvm_module(&why)) sj::fail(SJ_ERR_JIT, why);
  });
}

SJ_API sj_status sj_einsum(sj_context* ctx, const char* expression, const sj_tensor* const* operands, int n,
                           const char* const* formats, const char* output_format, const sj_op_options* options,
                           sj_tensor** result) {
  return guarded([&] {
    require(result, "result");
    auto plan = capi::make_plan(ctx, expression, operands, n, formats, output_format, options);
    Tensor out = plan->execute(capi::operand_list(ctx, operands, n));
    *result = capi::new_tensor_handle(ctx, std::move(out));
  });
}

}  // extern "C"
