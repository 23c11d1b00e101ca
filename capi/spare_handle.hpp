// One destroyed result kept per thread for that thread's next result.
//
// Why: a loop that makes a small result and destroys it (y = A*x, read y, destroy y) paid for
// a new handle, a Tensor with its levels, one block of memory and a shared owner for it, and
// all of it again on destruction: ~870 of the ~1,900 instructions of a tiny SpMSpV through a
// plan (callgrind, GD98_a, x at 1%), where the kernel itself is ~600. A destroyed small sparse
// vector is kept whole, handle and block: the next result takes the handle, and a sparse
// vector refills the block when it fits the part the kept one used (init_sparse_vector), as
// Eigen or GraphBLAS reuse an output object kept across calls; any other result replaces the
// kept tensor. Measured there (pinned, three alternating runs): 108 -> 67 ns a call through a
// plan, the same as into the caller's buffers; the drop-in call 128 -> 88 ns.
//
// Only sparse vectors of contexts with the library's own allocator are kept, never ones used
// as operands (their derived forms belong to that operand) or shared with another tensor, and
// only blocks of at most kSpareBlockBytes: a host's allocator hooks see every block come and
// go as before, and a thread holds at most that block, its handle and malloc's header after
// destroying its results. The kept handle is freed when its thread ends. Not under
// AddressSanitizer, so that a use of a destroyed result is still reported.
#pragma once
#include <cstddef>

struct sj_context;
struct sj_tensor;

namespace sj::capi {

inline constexpr size_t kSpareBlockBytes = size_t(16) << 10;

// The thread's kept handle, for a result of `ctx`, or null. Its tensor is a sparse vector
// that init_sparse_vector may refill (is_refillable_sparse_vector).
sj_tensor* take_spare_handle(sj_context* ctx);
// Keeps `h` as the thread's spare when it qualifies and the thread has none (and has not
// ended); returns false when the caller must delete it.
bool keep_spare_handle(sj_tensor* h);
// Whether `h` is the thread's kept handle: a destroyed result, destroyed again by mistake.
bool is_spare_handle(const sj_tensor* h);

}  // namespace sj::capi
