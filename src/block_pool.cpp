#include "src/block_pool.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/mman.h>

#include "src/environment.hpp"
#include "src/huge_pages.hpp"
#include "src/sanitizers.hpp"

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
  const std::optional<std::string_view> v = env::value("SPARSEJIT_POOL_MB");
  if (!v) return kDefaultMb << 20;
  const std::string text(*v);
  char* end = nullptr;
  errno = 0;
  const unsigned long long mb = std::strtoull(text.c_str(), &end, 10);
  if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno == ERANGE || mb > (std::numeric_limits<size_t>::max() >> 20)) {
    env::report_bad("SPARSEJIT_POOL_MB", *v, "a whole number of MiB", "256");
    return kDefaultMb << 20;
  }
  return static_cast<size_t>(mb) << 20;
}

std::atomic<int> live_leases_count{0};

// Frees a block of class `block` (or a whole slab, kHugePageBytes): from a huge page up they
// come from huge_page_allocate, smaller ones from malloc.
void free_block(void* p, size_t block) {
  if (block >= kHugePageBytes) huge_page_free(p, block);
  else std::free(p);
}

// What the pool gives back to the system: a whole slab or a plain block.
void free_dropped(void* p, size_t bytes) {
  if (!p) return;
  SJ_UNPOISON(p, bytes);
  free_block(p, bytes);
}

}  // namespace

BlockPool& BlockPool::global() {
  static BlockPool* pool = new BlockPool(limit_from_environment(), /*needs_lease=*/true);
  return *pool;
}

size_t BlockPool::block_size(size_t bytes) {
  if (bytes < kMinBlock || bytes > (std::numeric_limits<size_t>::max() >> 1)) return bytes;
  if (bytes <= kMaxSlabBlock) return std::bit_ceil(bytes);
  // Over 512 KiB, a block is at least one huge page: its first touch then costs one fault,
  // not up to 256 (~4 ms here), for at most 4x the memory on the requests of 0.5-1 MiB.
  if (bytes <= kHugePageBytes) return kHugePageBytes;
  // Larger ones in quarter steps of their power of two, whole huge pages: at most 25% over
  // the request from 8 MiB up, where powers of two wasted up to half, and counted so against
  // the pool's limit. (A+B of two 600k x 600k matrices, 16 a row: 73 + 147 MiB of arrays
  // took classes of 128 + 256 MiB, more than the default 256 MiB pool; every call faulted
  // them in again, 79 ms a call against 68 kept.)
  const size_t quarter = std::max(kHugePageBytes, std::bit_floor(bytes - 1) / 4);
  return (bytes + quarter - 1) / quarter * quarter;
}

void* BlockPool::allocate(size_t bytes, size_t align) {
  const size_t block = block_size(bytes);
  if (block >= kMinBlock && block <= limit_) {
    Kept hit{};
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = kept_.rbegin(); it != kept_.rend(); ++it)  // the most recently freed first
        if (it->bytes == block) {
          hit = *it;
          kept_.erase(std::next(it).base());
          held_ -= block;
          break;
        }
      if (!hit.p && slab_class(block))
        if (void* p = take_piece(block)) return p;
    }
    if (hit.p) {
      SJ_UNPOISON(hit.p, block);
      if (block >= kHugePageBytes && !fill_empty_pages(hit)) {
        huge_page_free(hit.p, block);  // a failed move left a hole: out of memory
        return nullptr;
      }
      return hit.p;
    }
  }
  if (block < kMinBlock) return small_allocate(block, align);
  if (block >= kHugePageBytes && block <= limit_ && !keeps_nothing()) {
    // A class that lost its blocks to others lately takes none of theirs in turn (take_oldest).
    std::vector<HugeBlock> donors;
    {
      std::lock_guard<std::mutex> lock(mu_);
      donors = take_oldest(block, may_take_before(block), 0);
    }
    return huge_page_allocate(block, donors);
  }
  // Without a context alive the global pool keeps nothing, so a slab would be cut and freed
  // again on every block: those blocks are plain (drop() tells them from pieces).
  if (slab_class(block) && !keeps_nothing()) {
    // A fresh slab, allocated outside the lock (its first huge page may be probed: ~0.1 ms).
    char* base = static_cast<char*>(huge_page_allocate(kHugePageBytes));
    if (!base) return nullptr;
    const uint32_t pieces = static_cast<uint32_t>(kHugePageBytes / block);
    const uint32_t all = pieces >= 32 ? ~uint32_t{0} : (uint32_t{1} << pieces) - 1;
    SJ_POISON(base + block, kHugePageBytes - block);
    std::lock_guard<std::mutex> lock(mu_);
    slabs_.push_back({base, block, all & ~uint32_t{1}, 1});
    return base;
  }
  // From a huge page up, whole 2 MiB pages: one fault per 2 MiB on first touch (huge_pages.hpp).
  if (block >= kHugePageBytes) return huge_page_allocate(block);
  // A class over the limit, or a slab class with no context alive (which may be kept later
  // and handed to any request of its class: so page-aligned, as pieces and huge blocks are).
  return std::aligned_alloc(std::max<size_t>(align, 4096), block);
}

void* BlockPool::take_piece(size_t block) {
  for (Slab& s : slabs_)
    if (s.piece == block && s.spare != 0) {
      const int k = std::countr_zero(s.spare);
      s.spare &= s.spare - 1;
      ++s.out;
      char* p = s.base + static_cast<size_t>(k) * block;
      SJ_UNPOISON(p, block);
      return p;
    }
  return nullptr;
}

// A block of a large class is made of the pages in memory of kept blocks freed longest ago
// (those LRU eviction would drop first), moved into its huge pages that have none
// (huge_page_fill): a first touch of memory the host has reclaimed costs far more on this VM
// (26 MiB: ~40 ms fresh, ~1.5 ms right after 64 MiB were unmapped, 0.2 ms moved). A miss takes
// about as many bytes as the block; a hit as many as it has empty, and only blocks freed before
// it: an upper-bound result that its first owner filled to 17% is whole when a later problem
// that fills it gets it, while problems used in turn never take each other's blocks at a hit
// (each was freed after the block the hit returns). A kept block over twice what is still
// needed stays (a 2 MiB miss must not take a 160 MiB result whose next call would fault it all
// in again). A class whose blocks were taken so, and that then misses itself within about a
// round of the blocks kept, takes only blocks kept before that loss (may_take_before):
// problems used in turn would otherwise take each other's blocks on every miss; this way they
// all end up kept, while a call whose first miss took an old block of its second one's class
// still makes the second of other old blocks (bcsstk08: a 4 MiB miss took a kept 6 MiB block,
// and its 6 MiB miss then faulted fresh pages when such a class took nothing). A loss longer
// ago does not count: a class of 2 MiB is taken from and missed by many unrelated problems.
// The classes are remembered until they miss (a few dozen at most: classes of 2 MiB and up
// are quarter steps of powers of two) or the pool is released.
std::vector<HugeBlock> BlockPool::take_oldest(size_t need, uint64_t freed_before, size_t spare_class) {
  std::vector<HugeBlock> donors;
  size_t got = 0;
  for (auto it = kept_.begin(); it != kept_.end() && got < need && it->freed < freed_before;) {
    // Pieces of slabs are small and go back with their slab.
    if (slab_class(it->bytes) || it->bytes > 2 * (need - got) || it->bytes == spare_class) {
      ++it;
      continue;
    }
    got += it->bytes;
    held_ -= it->bytes;
    const auto same = [&](const Taken& t) { return t.block == it->bytes; };
    if (auto t = std::find_if(taken_.begin(), taken_.end(), same); t != taken_.end()) t->at = frees_;
    else taken_.push_back({it->bytes, frees_});
    SJ_UNPOISON(it->p, it->bytes);
    donors.push_back({it->p, it->bytes});
    it = kept_.erase(it);
  }
  return donors;
}

uint64_t BlockPool::may_take_before(size_t block) {
  constexpr uint64_t kAny = std::numeric_limits<uint64_t>::max();
  const auto it = std::find_if(taken_.begin(), taken_.end(), [&](const Taken& t) { return t.block == block; });
  if (it == taken_.end()) return kAny;
  // In turn, each kept block is freed again about once a round: a loss fewer frees ago than
  // twice the blocks kept (and some temporaries) is one of this round.
  const uint64_t at = it->at;
  const bool lately = frees_ - at <= 2 * kept_.size() + 16;
  taken_.erase(it);
  return lately ? at + 1 : kAny;
}

bool BlockPool::fill_empty_pages(const Kept& hit) {
  if (keeps_nothing()) return true;
  const size_t empty = huge_page_empty_bytes(hit.p, hit.bytes);
  if (empty == 0) return true;
  std::vector<HugeBlock> donors;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Not the hit's own class: a call using two blocks of it would miss for the other one.
    donors = take_oldest(empty, hit.freed, hit.bytes);
  }
  return huge_page_fill(hit.p, hit.bytes, donors);
}

BlockPool::Kept BlockPool::drop(Kept k) {
  if (!slab_class(k.bytes)) return k;
  char* base = reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(k.p) & ~(uintptr_t{kHugePageBytes} - 1));
  for (auto it = slabs_.begin(); it != slabs_.end(); ++it)
    if (it->base == base) {
      const size_t i = static_cast<size_t>(static_cast<char*>(k.p) - base) / it->piece;
      if (--it->out == 0) {
        slabs_.erase(it);
        return {base, kHugePageBytes};
      }
      // Not resident while spare (under the lock: a spare piece may be cut again at once).
#if defined(MADV_DONTNEED)
      (void)madvise(k.p, it->piece, MADV_DONTNEED);
#endif
      it->spare |= uint32_t{1} << i;
      SJ_POISON(k.p, it->piece);
      return {nullptr, 0};
    }
  return k;  // a plain block of a slab class (allocated with no context alive)
}

// Small blocks (every array of a tiny call): one malloc with room to align inside it, the
// malloc'd pointer stored just below the aligned one. glibc's aligned_alloc carves an aligned
// chunk out of a larger one and frees the rest, about three times the work of a malloc, which
// was a visible part of a 1 us call.
void* BlockPool::small_allocate(size_t block, size_t align) {
  void* raw = std::malloc(block + align + sizeof(void*));
  if (!raw) return nullptr;
  const uintptr_t at = (reinterpret_cast<uintptr_t>(raw) + sizeof(void*) + align - 1) & ~(uintptr_t{align} - 1);
  reinterpret_cast<void**>(at)[-1] = raw;
  return reinterpret_cast<void*>(at);
}
void BlockPool::small_free(void* p) { std::free(static_cast<void**>(p)[-1]); }

void BlockPool::free(void* p, size_t bytes) {
  if (!p) return;
  const size_t block = block_size(bytes);
  // Blocks the pool never keeps go straight back: no lock, no bookkeeping on the frees of
  // small results (the common case for tiny calls).
  if (block < kMinBlock) {
    small_free(p);
    return;
  }
  // Not kept and no slab piece: no lock either.
  if ((block > limit_ || keeps_nothing()) && !slab_class(block)) {
    free_block(p, block);
    return;
  }
  std::vector<Kept> dropped;  // freed outside the lock
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Asked (again) under the lock: the last context may have ended since a test before it,
    // and its release() (which takes this lock after the count reached zero) would then have
    // run already, leaving a block kept here for no context until the next one ends.
    if (block > limit_ || keeps_nothing()) {
      dropped.push_back(drop({p, block}));
    } else {
      while (held_ + block > limit_) {
        const Kept k = kept_.front();
        kept_.pop_front();
        held_ -= k.bytes;
        dropped.push_back(drop(k));
      }
      kept_.push_back({p, block, ++frees_});
      held_ += block;
      SJ_POISON(p, block);
    }
  }
  for (const Kept& k : dropped) free_dropped(k.p, k.bytes);
}

void BlockPool::release() {
  std::vector<Kept> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Kept& k : kept_) dropped.push_back(drop(k));
    kept_.clear();
    held_ = 0;
    taken_.clear();
  }
  for (const Kept& k : dropped) free_dropped(k.p, k.bytes);
}

size_t BlockPool::held_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

bool BlockPool::keeps_nothing() const {
  return needs_lease_ && live_leases_count.load(std::memory_order_relaxed) == 0;
}

size_t BlockPool::slab_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slabs_.size() * kHugePageBytes;
}

int BlockPool::live_leases() { return live_leases_count.load(); }

BlockPool::Lease::Lease() { live_leases_count.fetch_add(1); }

BlockPool::Lease::~Lease() {
  if (live_leases_count.fetch_sub(1) == 1) global().release();
}

}  // namespace sj
