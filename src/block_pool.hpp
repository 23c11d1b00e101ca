// Large blocks of the default allocator, kept after they are freed and handed out again.
//
// Why: a result of a few MB is allocated by glibc with mmap and unmapped again when the caller
// destroys it, so a repeated call touches fresh pages every time. First touches are costly on
// virtual machines (measured here: ~15 us per 4 KiB page, so a 8 MB SpGEMM result costs 30 ms
// of page faults on a 30 ms product). Keeping freed blocks, as MKL's memory manager does,
// makes the steady state fault-free. Only the default allocator uses the pool; a host's own
// allocator hooks are called for every block as before.
//
// Blocks are binned by size class (powers of two from kMinBlock); the pool holds at most
// `limit` bytes of capacity (SPARSEJIT_POOL_MB, default 256; 0 turns it off) and gives all of
// it back when the last context is destroyed. Pooled blocks are poisoned under ASan, so a use
// after sj_tensor_destroy is still reported.
#pragma once
#include <cstddef>
#include <mutex>
#include <vector>

namespace sj {

class BlockPool {
 public:
  static constexpr size_t kMinBlock = size_t(256) << 10;  // smaller ones stay in malloc's heap

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
  static int size_class(size_t block);
  mutable std::mutex mu_;
  size_t limit_;
  bool needs_lease_;
  size_t held_ = 0;
  std::vector<std::vector<void*>> bins_;  // bins_[c]: free blocks of kMinBlock << c bytes
};

}  // namespace sj
