#include "src/block_pool.hpp"

#include <atomic>
#include <bit>
#include <cstdlib>
#include <limits>

#if defined(__SANITIZE_ADDRESS__)  // GCC
#define SJ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)  // clang
#define SJ_ASAN 1
#endif
#endif
#if defined(SJ_ASAN)
#include <sanitizer/asan_interface.h>
#define SJ_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define SJ_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define SJ_POISON(p, n) ((void)(p), (void)(n))
#define SJ_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace sj {
namespace {

size_t limit_from_environment() {
  constexpr size_t kDefaultMb = 256;
  const char* env = std::getenv("SPARSEJIT_POOL_MB");
  if (!env || !*env) return kDefaultMb << 20;
  char* end = nullptr;
  const unsigned long long mb = std::strtoull(env, &end, 10);
  if (*end != '\0' || mb > (std::numeric_limits<size_t>::max() >> 20)) return kDefaultMb << 20;
  return static_cast<size_t>(mb) << 20;
}

std::atomic<int> live_leases_count{0};

}  // namespace

BlockPool& BlockPool::global() {
  static BlockPool* pool = new BlockPool(limit_from_environment(), /*needs_lease=*/true);
  return *pool;
}

size_t BlockPool::block_size(size_t bytes) {
  if (bytes < kMinBlock || bytes > (std::numeric_limits<size_t>::max() >> 1)) return bytes;
  return std::bit_ceil(bytes);
}

int BlockPool::size_class(size_t block) { return std::countr_zero(block) - std::countr_zero(kMinBlock); }

void* BlockPool::allocate(size_t bytes, size_t align) {
  const size_t block = block_size(bytes);
  if (block >= kMinBlock && block <= limit_) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto c = static_cast<size_t>(size_class(block));
    if (c < bins_.size() && !bins_[c].empty()) {
      void* p = bins_[c].back();
      bins_[c].pop_back();
      held_ -= block;
      SJ_UNPOISON(p, block);
      return p;
    }
  }
  return std::aligned_alloc(align, block);
}

void BlockPool::free(void* p, size_t bytes) {
  if (!p) return;
  const size_t block = block_size(bytes);
  if (block >= kMinBlock) {
    std::lock_guard<std::mutex> lock(mu_);
    if (held_ + block <= limit_ && (!needs_lease_ || live_leases_count.load(std::memory_order_relaxed) > 0)) {
      const auto c = static_cast<size_t>(size_class(block));
      if (bins_.size() <= c) bins_.resize(c + 1);
      bins_[c].push_back(p);
      held_ += block;
      SJ_POISON(p, block);
      return;
    }
  }
  std::free(p);
}

void BlockPool::release() {
  std::vector<std::vector<void*>> bins;
  {
    std::lock_guard<std::mutex> lock(mu_);
    bins.swap(bins_);
    held_ = 0;
  }
  for (size_t c = 0; c < bins.size(); ++c)
    for (void* p : bins[c]) {
      SJ_UNPOISON(p, kMinBlock << c);
      std::free(p);
    }
}

size_t BlockPool::held_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

int BlockPool::live_leases() { return live_leases_count.load(); }

BlockPool::Lease::Lease() { live_leases_count.fetch_add(1); }

BlockPool::Lease::~Lease() {
  if (live_leases_count.fetch_sub(1) == 1) global().release();
}

}  // namespace sj
