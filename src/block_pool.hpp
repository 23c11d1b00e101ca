// Large blocks of the default allocator, kept after they are freed and handed out again.
//
// Why: a result of a few MB is allocated by glibc with mmap and unmapped again when the caller
// destroys it, so a repeated call touches fresh pages every time. First touches are costly on
// virtual machines (measured here: ~15 us per 4 KiB page, so a 8 MB SpGEMM result costs 30 ms
// of page faults on a 30 ms product). Keeping freed blocks, as MKL's memory manager does,
// makes the steady state fault-free. Only the default allocator uses the pool; a host's own
// allocator hooks are called for every block as before.
//
// Blocks have size classes: powers of two from kMinBlock, over 512 KiB at least one 2 MiB huge
// page (huge_pages.hpp: a fresh block then faults in once per 2 MiB), and over 2 MiB quarter
// steps of the power of two below, in whole huge pages. The classes from
// kMinBlock to kMaxSlabBlock are pieces of 2 MiB huge-page slabs, one class to a slab: a first
// call's mid-size arrays (a 400 KiB transposed copy, a 100 KiB row count) then cost one fault
// per slab, not one per 4 KiB (~11 us each on this VM: 1.8 ms of mbeacxc's first A*A^T); so
// only while a context lives and the class fits the limit (otherwise they are plain blocks).
// A slab goes back to the system once none of its pieces is in use or kept; a spare piece of
// a slab still in use leaves the resident set (MADV_DONTNEED: this splits the slab's huge page,
// and happens only when pieces are dropped). The pool keeps at most `limit` bytes of freed
// blocks (SPARSEJIT_POOL_MB, default 256; 0 turns it off), plus the uncut rest of one slab per
// class (more only while threads cut fresh slabs at once), dropping the blocks freed longest
// ago when a new one would not fit (the latest call's blocks are the ones the next call
// needs), and gives all of it back when the last context is destroyed. A miss for a class of
// 2 MiB or more takes blocks freed longest ago, about as many bytes as it needs (none over
// twice that), and the fresh block is made of their pages in memory (moved, not touched
// again); a class that lost its blocks so and misses soon after takes only blocks kept before
// that loss; a large block handed out again has its huge pages with nothing in memory filled
// so, from blocks kept longer than it and of another class (take_oldest).
// Pooled blocks are poisoned under ASan, so a use after sj_tensor_destroy is still reported.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>
#include <deque>
#include <mutex>
#include <vector>

#include "src/huge_pages.hpp"

namespace sj {

class BlockPool {
 public:
  static constexpr size_t kMinBlock = size_t(64) << 10;  // smaller ones stay in malloc's heap
  static constexpr size_t kMaxSlabBlock = size_t(512) << 10;  // the largest class cut from slabs

  // `needs_lease`: keep freed blocks only while some Lease is alive (the global pool).
  explicit BlockPool(size_t limit, bool needs_lease = false) : limit_(limit), needs_lease_(needs_lease) {}
  ~BlockPool() { release(); }
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // The process-wide pool of the default allocator (never destroyed: buffers may be freed
  // during static destruction).
  static BlockPool& global();

  // The capacity a request of `bytes` gets (its size class); what free() must be given back.
  static size_t block_size(size_t bytes);
  // A block of block_size(bytes), aligned to `align` (<= 4096); null when out of memory.
  void* allocate(size_t bytes, size_t align);
  // Returns a block from allocate(bytes, ...) of the same `bytes`: kept when it fits the limit.
  void free(void* p, size_t bytes);
  // Frees every kept block.
  void release();

  size_t held_bytes() const;
  // Bytes of the slabs the pool has from the system (their pieces in use, kept or not yet cut).
  size_t slab_bytes() const;
  size_t limit() const { return limit_; }

  // Contexts hold a lease; when the last one ends, the global pool is released.
  static int live_leases();
  struct Lease {
    Lease();
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
  };

 private:
  // Blocks under kMinBlock: malloc'd with room to align, never kept.
  static void* small_allocate(size_t block, size_t align);
  static void small_free(void* p);
  struct Kept {
    void* p = nullptr;
    size_t bytes = 0;
    uint64_t freed = 0;  // when it was kept: the pool's count of kept blocks then
  };
  // A 2 MiB slab cut into pieces of one size class; bit k of `spare` stands for the piece at
  // base + k * piece (at most 32 pieces: 2 MiB / 64 KiB).
  struct Slab {
    char* base;
    size_t piece;
    uint32_t spare;  // pieces not handed out
    uint32_t out;    // pieces handed out: in use or kept
  };
  // Blocks of this size class are cut from slabs while the pool keeps blocks (keeps_nothing()
  // false); a pool too small to keep them has no slabs.
  bool slab_class(size_t block) const { return block >= kMinBlock && block <= kMaxSlabBlock && block <= limit_; }
  // The global pool with no context alive: freed blocks are not kept and no slab is cut.
  bool keeps_nothing() const;
  // Under mu_: a spare piece of class `block` (null when no slab has one).
  void* take_piece(size_t block);
  // Under mu_: a block the pool lets go of. A piece goes back to its slab (its memory handed
  // back to the system while spare); returned is what the caller must free outside the lock:
  // the slab when none of its pieces is out any more, a block that is no piece, or nothing.
  Kept drop(Kept k);
  // Under mu_: kept blocks freed longest ago, and before `freed_before`, none of class
  // `spare_class`, about `need` bytes, taken from the pool for a large block to be made of
  // their pages (block_pool.cpp).
  std::vector<HugeBlock> take_oldest(size_t need, uint64_t freed_before, size_t spare_class);
  // Under mu_, at a miss: the `freed_before` of take_oldest. Where take_oldest took blocks of
  // this class lately (in the last round of problems used in turn), only blocks kept before
  // that; forgets the loss.
  uint64_t may_take_before(size_t block);
  // A large block handed out again: its huge pages with nothing in memory are filled from
  // blocks kept longer than it. False when a failed move left a hole in it (huge_page_fill).
  bool fill_empty_pages(const Kept& hit);
  mutable std::mutex mu_;
  size_t limit_;
  bool needs_lease_;
  size_t held_ = 0;
  std::deque<Kept> kept_;  // in the order they were freed, oldest first
  // Classes whose kept blocks take_oldest took, and frees_ then.
  struct Taken {
    size_t block;
    uint64_t at;
  };
  std::vector<Taken> taken_;
  uint64_t frees_ = 0;         // blocks kept so far (Kept::freed)
  std::vector<Slab> slabs_;
};

// An uninitialised array of n T for a kernel's temporaries (per-chunk pieces of a parallel
// result), taken from and given back to the global pool: a repeated parallel call reuses
// memory that is already mapped instead of faulting fresh pages in on every thread.
template <class T> class ScratchArray {
 public:
  ScratchArray() = default;
  // At least the pool's smallest class, so that it is always kept and reused: a smaller one
  // would go to malloc, whose heap top is trimmed on free and faulted in again next call.
  explicit ScratchArray(size_t n)
      : bytes_(std::max(BlockPool::kMinBlock, (std::max<size_t>(1, n) * sizeof(T) + 63) / 64 * 64)) {
    p_ = static_cast<T*>(BlockPool::global().allocate(bytes_, 64));
    if (!p_) throw std::bad_alloc();
  }
  ~ScratchArray() { reset(); }
  ScratchArray(ScratchArray&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(o.bytes_) {}
  ScratchArray& operator=(ScratchArray&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      bytes_ = o.bytes_;
    }
    return *this;
  }
  T* get() const { return p_; }
  void reset() {
    if (p_) BlockPool::global().free(p_, bytes_);
    p_ = nullptr;
  }

 private:
  T* p_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace sj
