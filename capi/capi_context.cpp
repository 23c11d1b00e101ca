// Context creation and destruction, and option defaults.
#include <cstring>
#include "capi/boundary.hpp"
#include "capi/handles.hpp"
#include "src/call_counter.hpp"
#include "src/derived_forms.hpp"
#include "src/logging.hpp"
#include "src/operation.hpp"

namespace sj::capi {
sj_tensor* publish_tensor_handle(std::unique_ptr<sj_tensor> h) {
  count_add(h->ctx->live_tensors);
  return h.release();
}

const Tensor& operand_of(const sj_context* ctx, const sj_tensor* h, int i) {
  // What a call keeps on an operand (converted forms, drop-in plans) comes from the call's
  // context, and must not outlive it on a handle of another one.
  if (h->ctx != ctx)
    fail(SJ_ERR_INVALID_ARGUMENT, "operand ", i,
         " belongs to another context (sj_tensor_convert copies a tensor into this one)");
  // Handles are never const objects (the API hands out pointers to new ones), so the store
  // may be set through the const pointer an operand list has.
  auto* mut = const_cast<sj_tensor*>(h);
  absl::call_once(mut->derived_once, [mut] { mut->t.derived = std::make_shared<DerivedForms>(); });
  return h->t;
}

sj_tensor* new_tensor_handle(sj_context* ctx, Tensor&& t) {
  return publish_tensor_handle(std::unique_ptr<sj_tensor>(new sj_tensor{ctx, std::move(t), {}}));
}
}  // namespace sj::capi

using sj::capi::guarded;
using sj::capi::require;

extern "C" {

SJ_API sj_status sj_config_init(sj_config* config) {
  return guarded([&] {
    require(config, "config");
    *config = sj_config{};
    config->struct_size = sizeof(sj_config);
    config->threads = 0;
    config->log_level = SJ_LOG_ERROR;
    config->kernel_cache_capacity = 0;  // the process-wide cache's capacity as it is
  });
}

SJ_API sj_status sj_context_create(const sj_config* config, sj_context** out) {
  return guarded([&] {
    require(out, "out");
    sj_config c;
    sj_config_init(&c);
    if (config) {
      if (config->struct_size == 0 || config->struct_size > sizeof(sj_config))
        sj::fail(SJ_ERR_INVALID_ARGUMENT, "config.struct_size is ", config->struct_size,
                 " (initialise the config with sj_config_init)");
      std::memcpy(&c, config, config->struct_size);
    }
    if (c.threads < 0) sj::fail(SJ_ERR_INVALID_ARGUMENT, "config.threads is negative (", c.threads, ")");
    if (c.threads > sj::kMaxThreads)
      sj::fail(SJ_ERR_INVALID_ARGUMENT, "config.threads is ", c.threads, ", over the most a context runs (",
               sj::kMaxThreads, ")");
    if (c.log_level < SJ_LOG_TRACE || c.log_level > SJ_LOG_OFF)
      sj::fail(SJ_ERR_INVALID_ARGUMENT, "config.log_level ", static_cast<int>(c.log_level), " is unknown");
    if ((c.allocator.alloc == nullptr) != (c.allocator.free == nullptr))
      sj::fail(SJ_ERR_INVALID_ARGUMENT, "config.allocator needs both alloc and free, or neither");
    auto ctx = std::make_unique<sj_context>();
    ctx->impl = std::make_unique<sj::Context>(c);
    sj::register_context_logger(ctx->impl->logger);  // global messages reach this host too
    *out = ctx.release();
  });
}

SJ_API sj_status sj_context_destroy(sj_context* ctx) {
  return guarded([&] {
    if (!ctx) return;
    if (ctx->live_tensors > 0 || ctx->live_plans > 0)
      sj::fail(SJ_ERR_INVALID_ARGUMENT, "context still has ", ctx->live_tensors.load(), " tensors and ",
               ctx->live_plans.load(), " plans alive; destroy them first");
    sj::unregister_context_logger(ctx->impl->logger.get());
    delete ctx;
  });
}

SJ_API sj_status sj_op_options_init(sj_op_options* options) {
  return guarded([&] {
    require(options, "options");
    *options = sj::default_options();
  });
}

}  // extern "C"
