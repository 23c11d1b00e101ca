// Caller-owned outputs: sj_plan_execute_sizes runs the plan once and keeps the result in an
// sj_pending; sj_pending_fill checks the caller's buffers against its layout and copies, so
// the caller's memory holds the final arrays and the library's copy is released.
#include <cstring>
#include <mutex>

#include "capi/boundary.hpp"
#include "capi/handles.hpp"
#include "src/call_counter.hpp"
#include "src/output_copy.hpp"

struct sj_pending {
  sj_context* ctx = nullptr;
  std::mutex mutex;  // a misuse from two threads must not tear the state
  sj::Tensor result;
  sj::OutputLayout layout;
  sj::LevelLayout levels;  // the same result per level (any order)
  bool filled = false;
};

using namespace sj;
using sj::capi::guarded;
using sj::capi::require;

namespace {

// The caller's struct is the exact version this library was built with (the caller fills
// every field of these output structs, so a shorter or longer one cannot be read safely).
void require_struct_size(size_t got, size_t want, const char* what, const char* type) {
  if (got != want)
    fail(SJ_ERR_INVALID_ARGUMENT, what, ".struct_size is ", got, ", expected ", want, " (set it to sizeof(", type,
         "))");
}

sj_output_sizes to_c(const OutputLayout& o) {
  sj_output_sizes s{};
  s.struct_size = sizeof(sj_output_sizes);
  s.format = o.format;
  s.order = o.order;
  s.dims[0] = o.dims[0];
  s.dims[1] = o.dims[1];
  s.index_type = to_c(o.index_type);
  s.value_type = to_c(o.value_type);
  s.pos_len = o.pos_len;
  s.crd_len = o.crd_len;
  s.values_len = o.values_len;
  return s;
}

sj_output_levels to_c(const LevelLayout& o) {
  sj_output_levels s{};
  s.struct_size = sizeof(sj_output_levels);
  s.order = o.order;
  for (int l = 0; l < kMaxOrder; ++l) {
    s.dims[l] = o.dims[l];
    s.mode_order[l] = o.mode_order[l];
    s.levels[l] = o.unique[l] ? to_c(o.kinds[l]) : SJ_LEVEL_COMPRESSED_NONUNIQUE;
    s.pos_len[l] = o.pos_len[l];
    s.crd_len[l] = o.crd_len[l];
  }
  s.index_type = to_c(o.index_type);
  s.value_type = to_c(o.value_type);
  s.values_len = o.values_len;
  return s;
}

}  // namespace

extern "C" {

SJ_API sj_status sj_plan_execute_sizes(sj_plan* plan, const sj_tensor* const* operands, int n,
                                       sj_output_sizes* sizes, sj_pending** pending) {
  return guarded([&] {
    require(plan, "plan");
    require(sizes, "sizes");
    require(pending, "pending");
    require_struct_size(sizes->struct_size, sizeof(sj_output_sizes), "sizes", "sj_output_sizes");
    // The ordinary execution (whatever kind of plan), run once; its result moves into the
    // pending object instead of staying behind a handle.
    sj_tensor* computed = nullptr;
    sj_status st = sj_plan_execute(plan, operands, n, &computed);
    if (st != SJ_OK) throw Error(st, capi::last_error());
    std::unique_ptr<sj_tensor, decltype(&sj_tensor_destroy)> owner(computed, sj_tensor_destroy);
    auto p = std::make_unique<sj_pending>();
    p->ctx = plan->ctx;
    p->result = as_flat_output(computed->t, plan->ctx->impl->allocator);
    p->result.derived = nullptr;
    p->layout = output_layout(p->result);
    p->levels = level_layout(p->result);
    *sizes = to_c(p->layout);
    count_add(plan->ctx->live_tensors);
    *pending = p.release();
  });
}

SJ_API sj_status sj_plan_execute_into(sj_plan* plan, const sj_tensor* const* operands, int n,
                                      const sj_output_buffers* buffers, sj_output_sizes* sizes) {
  OutputTarget target;
  const sj_status st = guarded([&] {
    require(plan, "plan");
    require(buffers, "buffers");
    require(sizes, "sizes");
    require_struct_size(buffers->struct_size, sizeof(sj_output_buffers), "buffers", "sj_output_buffers");
    require_struct_size(sizes->struct_size, sizeof(sj_output_sizes), "sizes", "sj_output_sizes");
    const OutputBuffers b{buffers->pos, buffers->pos_capacity, buffers->crd,
                          buffers->crd_capacity, buffers->values, buffers->values_capacity};
    target.buffers = &b;
    if (!plan->einsum) {
      plan->plan->execute_into(capi::borrow_operands(plan->ctx, operands, n), target);
      return;
    }
    // Index-notation plans: the result is made, then copied (as sj_pending_fill would).
    std::unique_ptr<sj_tensor, decltype(&sj_tensor_destroy)> owner(capi::execute_einsum(plan, operands, n),
                                                                   sj_tensor_destroy);
    const Tensor flat = as_flat_output(owner->t, plan->ctx->impl->allocator);
    target.layout = output_layout(flat);
    target.layout_known = true;
    copy_output(flat, target.layout, b);
  });
  // The layout also when a buffer was too small: the caller sizes its buffers and calls again.
  if (target.layout_known && sizes) *sizes = to_c(target.layout);
  return st;
}

SJ_API sj_status sj_pending_fill(sj_pending* pending, const sj_output_buffers* buffers) {
  return guarded([&] {
    require(pending, "pending");
    require(buffers, "buffers");
    require_struct_size(buffers->struct_size, sizeof(sj_output_buffers), "buffers", "sj_output_buffers");
    std::lock_guard lock(pending->mutex);
    if (pending->filled) fail(SJ_ERR_INVALID_ARGUMENT, "this pending result was already filled into buffers");
    OutputBuffers b{buffers->pos, buffers->pos_capacity, buffers->crd, buffers->crd_capacity,
                    buffers->values, buffers->values_capacity};
    copy_output(pending->result, pending->layout, b);
    pending->filled = true;
    pending->result = Tensor{};  // the caller's buffers hold it now
  });
}

SJ_API sj_status sj_pending_get_levels(sj_pending* pending, sj_output_levels* levels) {
  return guarded([&] {
    require(pending, "pending");
    require(levels, "levels");
    require_struct_size(levels->struct_size, sizeof(sj_output_levels), "levels", "sj_output_levels");
    std::lock_guard lock(pending->mutex);
    *levels = to_c(pending->levels);
  });
}

SJ_API sj_status sj_pending_fill_levels(sj_pending* pending, const sj_output_level_buffers* buffers) {
  return guarded([&] {
    require(pending, "pending");
    require(buffers, "buffers");
    require_struct_size(buffers->struct_size, sizeof(sj_output_level_buffers), "buffers",
                        "sj_output_level_buffers");
    std::lock_guard lock(pending->mutex);
    if (pending->filled) fail(SJ_ERR_INVALID_ARGUMENT, "this pending result was already filled into buffers");
    LevelBuffers b;
    for (int l = 0; l < kMaxOrder; ++l) {
      b.pos[l] = buffers->pos[l];
      b.pos_capacity[l] = buffers->pos_capacity[l];
      b.crd[l] = buffers->crd[l];
      b.crd_capacity[l] = buffers->crd_capacity[l];
    }
    b.values = buffers->values;
    b.values_capacity = buffers->values_capacity;
    copy_levels(pending->result, pending->levels, b);
    pending->filled = true;
    pending->result = Tensor{};  // the caller's buffers hold it now
  });
}

SJ_API sj_status sj_pending_destroy(sj_pending* pending) {
  return guarded([&] {
    if (!pending) return;
    count_add(pending->ctx->live_tensors, -1);
    delete pending;
  });
}

}  // extern "C"
