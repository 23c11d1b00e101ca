#include "capi/spare_handle.hpp"

#include <utility>

#include "capi/handles.hpp"
#include "src/thread_scratch.hpp"

namespace sj::capi {
namespace {

struct SpareHandle {
  sj_tensor* h = nullptr;
  ~SpareHandle() { delete h; }
};
thread_local SpareHandle t_spare;

}  // namespace

sj_tensor* take_spare_handle(sj_context* ctx) {
  SpareHandle& spare = tls_pinned(t_spare);  // one __tls_get_addr, not one per use
  // A kept block is the default allocator's: a context with its own hooks gets a new handle.
  if (!spare.h || !ctx->impl->allocator.is_default()) return nullptr;
  return std::exchange(spare.h, nullptr);
}

bool keep_spare_handle(sj_tensor* h) {
  SpareHandle& spare = tls_pinned(t_spare);
  // A handle used as an operand has run its once_flag and holds derived forms, which
  // is_refillable_sparse_vector refuses. Handles of other results are not kept: clearing their
  // tensor costs about what the handle's free saves (callgrind).
  if (spare.h || !is_refillable_sparse_vector(h->t, kSpareBlockBytes) || !h->ctx->impl->allocator.is_default())
    return false;
  spare.h = h;
  return true;
}

}  // namespace sj::capi
