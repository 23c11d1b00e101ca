#include "src/allocator.hpp"

#include <cstdlib>
#include <limits>

#include "src/block_pool.hpp"
#include "src/error.hpp"

namespace sj {
namespace {

constexpr size_t kAlign = 64;

// Large blocks come from (and go back to) the pool of freed blocks: see block_pool.hpp.
void* default_alloc(size_t size, size_t align, void*) { return BlockPool::global().allocate(size, align); }
void default_free(void* p, size_t size, void*) { BlockPool::global().free(p, size); }

}  // namespace

Allocator::Allocator() : hooks_{default_alloc, default_free, nullptr} {}

Allocator::Allocator(const sj_allocator& hooks) : hooks_(hooks) {
  if (!hooks_.alloc || !hooks_.free) hooks_ = {default_alloc, default_free, nullptr};
}

std::shared_ptr<void> Allocator::allocate(size_t bytes) const {
  if (bytes > std::numeric_limits<size_t>::max() - kAlign)
    fail(SJ_ERR_OUT_OF_MEMORY, "allocation of ", bytes, " bytes overflows");
  if (memory_cap_ != 0 && bytes > memory_cap_)
    fail(SJ_ERR_OUT_OF_MEMORY, "allocation of ", bytes, " bytes exceeds the memory cap of ",
         memory_cap_, " bytes");
  // aligned_alloc wants a multiple of the alignment; a zero-size array still gets a
  // distinct non-null pointer so kernels may form begin/end pointers freely.
  size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  if (rounded == 0) rounded = kAlign;
  void* p = hooks_.alloc(rounded, kAlign, hooks_.user);
  if (!p) fail(SJ_ERR_OUT_OF_MEMORY, "out of memory allocating ", bytes, " bytes");
  sj_allocator hooks = hooks_;
  return std::shared_ptr<void>(p, [hooks, rounded](void* q) { hooks.free(q, rounded, hooks.user); });
}

void Allocator::charge(size_t bytes, std::string_view what) const {
  if (!over_cap(bytes)) return;
  if (bytes == std::numeric_limits<size_t>::max())
    fail(SJ_ERR_OUT_OF_MEMORY, what, " needs more bytes than memory can hold, over the memory cap of ", memory_cap_,
         " bytes");
  fail(SJ_ERR_OUT_OF_MEMORY, what, " needs ", bytes, " bytes, over the memory cap of ", memory_cap_, " bytes");
}

size_t estimate_bytes(int64_t count, size_t elem, size_t extra) {
  if (count <= 0) return extra;
  size_t r;
  if (__builtin_mul_overflow(static_cast<size_t>(count), elem, &r) || __builtin_add_overflow(r, extra, &r))
    return std::numeric_limits<size_t>::max();
  return r;
}

const Allocator& default_allocator() {
  static const Allocator a;
  return a;
}

}  // namespace sj
