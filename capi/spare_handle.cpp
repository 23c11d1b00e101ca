#include "capi/spare_handle.hpp"

#include <utility>

#include "capi/handles.hpp"
#include "src/sanitizers.hpp"
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
  // A handle used as an operand has run its once_flag and holds derived forms: not reusable.
  if (kUnderAsan || spare.h || h->t.derived || !h->ctx->impl->allocator.is_default()) return false;
  if (!is_refillable_sparse_vector(h->t, kSpareBlockBytes)) h->t = Tensor{};
  spare.h = h;
  return true;
}

}  // namespace sj::capi
