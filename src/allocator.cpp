#include "src/allocator.hpp"

#include <atomic>
#include <cstdlib>
#include <limits>
#include <new>

#include "src/block_pool.hpp"
#include "src/error.hpp"

namespace sj {
namespace {

constexpr size_t kAlign = 64;

// Large blocks come from (and go back to) the pool of freed blocks: see block_pool.hpp.
void* default_alloc(size_t size, size_t align, void*) { return BlockPool::global().allocate(size, align); }
void default_free(void* p, size_t size, void*) { BlockPool::global().free(p, size); }

// Blocks up to kInBlockMax carry their owner's reference counts in front of the data: one
// hook call and one free per array instead of two of each (the shared_ptr's control block was
// a malloc of its own: ~150 of the ~3,870 instructions of a tiny SpMSpV call, callgrind on
// GD98_a; the control block of libstdc++ takes the 64 bytes exactly). Larger blocks
// keep a separate control block: the header would push a pooled block of a power-of-two size
// into the next size class (block_pool.hpp), so a block with a header stays within the pool's
// smallest class.
constexpr size_t kHeader = kAlign;  // the control block, keeping the data aligned
constexpr size_t kInBlockMax = BlockPool::kMinBlock - kHeader;

// The allocator of the control block: hands out the header of `block` (once) and gives the
// whole block back through the hooks when the control block goes.
template <class T> struct InBlock {
  using value_type = T;
  void* block;
  size_t size;
  sj_allocator hooks;
  InBlock(void* b, size_t s, const sj_allocator& h) : block(b), size(s), hooks(h) {}
  template <class U> InBlock(const InBlock<U>& o) : block(o.block), size(o.size), hooks(o.hooks) {}
  T* allocate(size_t n) {
    if (n * sizeof(T) > kHeader) throw std::bad_alloc();  // a larger control block (another C++ library): see allocate()
    return static_cast<T*>(block);
  }
  void deallocate(T*, size_t) { hooks.free(block, size, hooks.user); }
  template <class U> bool operator==(const InBlock<U>& o) const { return block == o.block; }
};
// The data needs no freeing of its own: it goes with the block (InBlock::deallocate).
struct InBlockData {
  void operator()(void*) const {}
};

}  // namespace

Allocator::Allocator() : hooks_{default_alloc, default_free, nullptr} {}

Allocator::Allocator(const sj_allocator& hooks) : hooks_(hooks) {
  if (!hooks_.alloc || !hooks_.free) hooks_ = {default_alloc, default_free, nullptr};
}

bool Allocator::is_default() const { return hooks_.alloc == default_alloc && hooks_.free == default_free; }

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
  // The header goes in front unless this C++ library's control block turned out not to fit it
  // (found at the first small allocation, then never tried again).
  static std::atomic<bool> header_fits{true};
  const bool in_block = rounded <= kInBlockMax && header_fits.load(std::memory_order_relaxed);
  const size_t size = in_block ? kHeader + rounded : rounded;
  void* p = hooks_.alloc(size, kAlign, hooks_.user);
  if (!p) fail(SJ_ERR_OUT_OF_MEMORY, "out of memory allocating ", bytes, " bytes");
  if (in_block) {
    try {
      return std::shared_ptr<void>(static_cast<char*>(p) + kHeader, InBlockData{}, InBlock<char>(p, size, hooks_));
    } catch (const std::bad_alloc&) {  // the control block does not fit the header
      hooks_.free(p, size, hooks_.user);
      header_fits.store(false, std::memory_order_relaxed);
      return allocate(bytes);
    }
  }
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
