#include "capi/spare_handle.hpp"

#include "capi/handles.hpp"
#include "src/sanitizers.hpp"

namespace sj::capi {
namespace {

struct SpareHandle {
  sj_tensor* h = nullptr;
  ~SpareHandle() { delete h; }
};
thread_local SpareHandle t_spare;

}  // namespace

sj_tensor* take_spare_handle(sj_context* ctx) {
  // A kept block is the default allocator's: a context with its own hooks gets a new handle.
  if (!t_spare.h || !ctx->impl->allocator.is_default()) return nullptr;
  sj_tensor* h = t_spare.h;
  t_spare.h = nullptr;
  return h;
}

bool keep_spare_handle(sj_tensor* h) {
  // A handle used as an operand has run its once_flag and holds derived forms: not reusable.
  if (kUnderAsan || t_spare.h || h->t.derived || !h->ctx->impl->allocator.is_default()) return false;
  if (!is_refillable_sparse_vector(h->t, kSpareBlockBytes)) h->t = Tensor{};
  t_spare.h = h;
  return true;
}

}  // namespace sj::capi
