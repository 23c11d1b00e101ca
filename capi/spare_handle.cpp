#include "capi/spare_handle.hpp"

#include <utility>

#include "capi/handles.hpp"
#include "src/block_pool.hpp"
#include "src/thread_scratch.hpp"

namespace sj::capi {
namespace {

// Trivially destructible, so still usable while the thread's (at exit, the main thread's)
// thread_local destructors run: a host may destroy results from a static destructor.
struct Spare {
  sj_tensor* h = nullptr;
  bool armed = false;   // t_freer's destructor is registered
  bool closed = false;  // the thread is ending: nothing more is kept
};
thread_local Spare t_spare;
// Frees the kept handle when the thread ends.
struct SpareFreer {
  bool live = true;
  ~SpareFreer() {
    Spare& s = tls_pinned(t_spare);
    delete std::exchange(s.h, nullptr);
    s.closed = true;
  }
};
thread_local SpareFreer t_freer;

// The kept block stays out of the pool, which gives everything back when the last context ends.
static_assert(kSpareBlockBytes + 2 * 64 < BlockPool::kMinBlock, "a kept block must come from malloc");

}  // namespace

sj_tensor* take_spare_handle(sj_context* ctx) {
  Spare& s = tls_pinned(t_spare);  // one __tls_get_addr, not one per use
  // A kept block is the default allocator's: a context with its own hooks gets a new handle.
  if (!s.h || !ctx->impl->allocator.is_default()) return nullptr;
  return std::exchange(s.h, nullptr);
}

bool is_spare_handle(const sj_tensor* h) { return h == tls_pinned(t_spare).h; }

bool keep_spare_handle(sj_tensor* h) {
  Spare& s = tls_pinned(t_spare);
  // A handle used as an operand has run its once_flag and holds derived forms, which
  // is_refillable_sparse_vector refuses. Handles of other results are not kept: clearing their
  // tensor costs about what the handle's free saves (callgrind).
  if (s.h || s.closed || !is_refillable_sparse_vector(h->t, kSpareBlockBytes) ||
      !h->ctx->impl->allocator.is_default())
    return false;
  if (!s.armed) s.armed = t_freer.live;  // the first use constructs t_freer, registering it
  s.h = h;
  return true;
}

}  // namespace sj::capi
