// What the opaque C handles hold. A context counts the tensors and plans made with it so
// that destroying it early is refused instead of leaving them dangling.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

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
  sj::Tensor t;
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
sj_tensor* new_tensor_handle(sj_context* ctx, Tensor t);

// The caller's operand handles as a list that borrows their tensors (n from 0 to 3; NULL
// pointers refused with SJ_ERR_NULL_POINTER naming the operand).
OperandList borrow_operands(const sj_tensor* const* operands, int n);
// Executes an index-notation plan (capi/capi_einsum.cpp); returns the new result handle.
sj_tensor* execute_einsum(sj_plan* plan, const sj_tensor* const* operands, int n);

}  // namespace sj::capi
