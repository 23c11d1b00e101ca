// The pool of freed large blocks behind the default allocator (src/block_pool.hpp).
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <random>
#include <thread>
#include <vector>

#include "sparsejit/sparsejit.h"
#include "src/block_pool.hpp"
#include "src/huge_pages.hpp"
#include "src/sanitizers.hpp"

namespace {

using sj::BlockPool;
constexpr size_t kMin = BlockPool::kMinBlock;

TEST(BlockPool, SizeClassesArePowersOfTwoThenHugePagesInQuarterSteps) {
  EXPECT_EQ(BlockPool::block_size(100), 100u);
  EXPECT_EQ(BlockPool::block_size(kMin - 64), kMin - 64);
  EXPECT_EQ(BlockPool::block_size(kMin), kMin);
  EXPECT_EQ(BlockPool::block_size(kMin + 64), 2 * kMin);
  EXPECT_EQ(BlockPool::block_size(2 * kMin), 2 * kMin);
  constexpr size_t kSlab = BlockPool::kMaxSlabBlock;
  EXPECT_EQ(BlockPool::block_size(kSlab - 64), kSlab);
  EXPECT_EQ(BlockPool::block_size(kSlab), kSlab);
  // Over 512 KiB a block is at least one huge page.
  EXPECT_EQ(BlockPool::block_size(kSlab + 64), sj::kHugePageBytes);
  EXPECT_EQ(BlockPool::block_size(3 * kSlab / 2), sj::kHugePageBytes);
  EXPECT_EQ(BlockPool::block_size(sj::kHugePageBytes), sj::kHugePageBytes);
  EXPECT_EQ(BlockPool::block_size(sj::kHugePageBytes + 1), 2 * sj::kHugePageBytes);
  // Over 2 MiB, quarter steps of the power of two below (at least a huge page).
  constexpr size_t MiB = size_t(1) << 20;
  EXPECT_EQ(BlockPool::block_size(5 * MiB), 6 * MiB);
  EXPECT_EQ(BlockPool::block_size(8 * MiB), 8 * MiB);
  EXPECT_EQ(BlockPool::block_size(8 * MiB + 1), 10 * MiB);
  EXPECT_EQ(BlockPool::block_size(33 * MiB), 40 * MiB);
  EXPECT_EQ(BlockPool::block_size(147 * MiB), 160 * MiB);
  EXPECT_EQ(BlockPool::block_size(256 * MiB), 256 * MiB);
  for (size_t b = 2 * MiB + 1; b < 600 * MiB; b += 7 * MiB + 12345) {
    const size_t c = BlockPool::block_size(b);
    EXPECT_GE(c, b);
    EXPECT_EQ(c % sj::kHugePageBytes, 0u);
    EXPECT_LE(c, b + std::max(sj::kHugePageBytes, b / 4)) << b;
    EXPECT_EQ(BlockPool::block_size(c), c) << "a class is its own class";
  }
}

// The VmFlags line of the mapping that holds `p`, from /proc/self/smaps ("" if not found).
std::string vm_flags_of(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  const auto at = reinterpret_cast<uintptr_t>(p);
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find('-') < line.find(' ')) {
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

// Large blocks start on a huge-page boundary and carry MADV_HUGEPAGE, so their first touch is
// one fault per 2 MiB (docs/runtime-overhead.md).
// Sets a huge-page policy (the cold-fault threshold, and the 4 KiB fault time a cold probe
// compares against: -1 measures it) for one test, and restores them.
struct HugePageSetting {
  sj::HugePagePolicy before = sj::huge_page_policy();
  HugePageSetting(sj::HugePagePolicy p, int64_t cold_ns = 1'000'000, int64_t small_ns = -1) {
    sj::set_huge_page_policy_for_testing(p);
    sj::set_huge_page_cold_fault_ns_for_testing(cold_ns);
    sj::set_small_page_fault_ns_for_testing(small_ns);
  }
  ~HugePageSetting() {
    sj::set_huge_page_policy_for_testing(before);
    sj::set_huge_page_cold_fault_ns_for_testing(1'000'000);
    sj::set_small_page_fault_ns_for_testing(-1);
  }
};
bool have_thp() { return static_cast<bool>(std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")); }

TEST(BlockPool, LargeBlocksAreAlignedAndAdvisedAsHugePages) {
  HugePageSetting on(sj::HugePagePolicy::kOn);  // auto could have found a cold page already
  BlockPool pool(64 * kMin);
  const size_t bytes = 3 * BlockPool::kMaxSlabBlock / 2;
  void* big = pool.allocate(bytes, 64);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big) % sj::kHugePageBytes, 0u);
  std::memset(big, 1, BlockPool::block_size(bytes));  // the whole block is usable
  if (std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) {
    EXPECT_NE(vm_flags_of(big).find(" hg"), std::string::npos) << vm_flags_of(big);
  }
  pool.free(big, bytes);
  pool.release();
}

// The mid-size classes are cut from 2 MiB slabs, one class to a slab: pieces are disjoint,
// aligned to their size, and one huge page serves many (so a first call faults once per slab).
TEST(BlockPool, MidSizeBlocksArePiecesOfOneHugePageSlab) {
  HugePageSetting on(sj::HugePagePolicy::kOn);
  BlockPool pool(256 * kMin);
  const size_t per_slab = sj::kHugePageBytes / kMin;
  std::vector<unsigned char*> pieces;
  for (size_t k = 0; k < per_slab; ++k) pieces.push_back(static_cast<unsigned char*>(pool.allocate(kMin, 64)));
  const auto base = reinterpret_cast<uintptr_t>(pieces[0]) & ~(uintptr_t{sj::kHugePageBytes} - 1);
  for (size_t k = 0; k < per_slab; ++k) {
    ASSERT_NE(pieces[k], nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pieces[k]) % kMin, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pieces[k]) & ~(uintptr_t{sj::kHugePageBytes} - 1), base) << k;
    std::memset(pieces[k], static_cast<int>(k), kMin);
  }
  for (size_t k = 0; k < per_slab; ++k)
    for (size_t i = 0; i < kMin; i += 997) ASSERT_EQ(pieces[k][i], static_cast<unsigned char>(k)) << k << " " << i;
  EXPECT_EQ(pool.slab_bytes(), sj::kHugePageBytes);
  if (have_thp()) EXPECT_NE(vm_flags_of(pieces[0]).find(" hg"), std::string::npos) << vm_flags_of(pieces[0]);
  void* next = pool.allocate(kMin, 64);  // the slab is full: a second one
  void* other = pool.allocate(4 * kMin, 64);  // another class: a slab of its own
  EXPECT_EQ(pool.slab_bytes(), 3 * sj::kHugePageBytes);
  EXPECT_NE(reinterpret_cast<uintptr_t>(next) & ~(uintptr_t{sj::kHugePageBytes} - 1), base);
  for (size_t k = 0; k < per_slab; ++k) pool.free(pieces[k], kMin);
  pool.free(next, kMin);
  pool.free(other, 4 * kMin);
  EXPECT_EQ(pool.held_bytes(), (per_slab + 1) * kMin + 4 * kMin);
  pool.release();
  EXPECT_EQ(pool.held_bytes(), 0u);
  EXPECT_EQ(pool.slab_bytes(), 0u);
}

// A slab goes back to the system only when none of its pieces is in use or kept; a piece
// dropped over the limit is cut again from its slab.
TEST(BlockPool, ASlabGoesBackWhenNoPieceIsOut) {
  BlockPool pool(kMin);  // keeps one piece
  void* a = pool.allocate(kMin, 64);
  void* b = pool.allocate(kMin, 64);
  EXPECT_EQ(pool.slab_bytes(), sj::kHugePageBytes);
  pool.free(a, kMin);
  pool.free(b, kMin);  // a is dropped: back to its slab, which b still uses
  EXPECT_EQ(pool.held_bytes(), kMin);
  EXPECT_EQ(pool.slab_bytes(), sj::kHugePageBytes);
  EXPECT_EQ(pool.allocate(kMin, 64), b);  // the kept one
  EXPECT_EQ(pool.allocate(kMin, 64), a);  // cut again from the slab
  EXPECT_EQ(pool.slab_bytes(), sj::kHugePageBytes);
  pool.free(a, kMin);
  pool.release();  // b is still in use
  EXPECT_EQ(pool.slab_bytes(), sj::kHugePageBytes);
  pool.free(b, kMin);
  pool.release();
  EXPECT_EQ(pool.slab_bytes(), 0u);
  BlockPool off(0);  // a pool that keeps nothing cuts no slabs
  void* p = off.allocate(kMin, 64);
  EXPECT_EQ(off.slab_bytes(), 0u);
  off.free(p, kMin);
}

// A pool that keeps blocks only while a context lives (the global one): with none alive it
// cuts no slab (it would be freed again at once); pieces freed after the last context went
// back to their slab, and a plain block kept meanwhile is freed as one.
TEST(BlockPool, WithoutAContextBlocksArePlainAndPiecesGoBack) {
  if (BlockPool::live_leases() != 0) GTEST_SKIP() << "another context is alive";
  BlockPool pool(64 * kMin, /*needs_lease=*/true);
  void* a = nullptr;
  void* b = nullptr;
  {
    BlockPool::Lease lease;
    a = pool.allocate(kMin, 64);
    b = pool.allocate(kMin, 64);
    EXPECT_EQ(pool.slab_bytes(), sj::kHugePageBytes);
    pool.free(a, kMin);  // kept
    EXPECT_EQ(pool.held_bytes(), kMin);
  }
  pool.free(b, kMin);  // no context: back to its slab, which the kept a still holds
  EXPECT_EQ(pool.slab_bytes(), sj::kHugePageBytes);
  pool.release();
  EXPECT_EQ(pool.slab_bytes(), 0u);
  void* c = pool.allocate(kMin, 64);  // no context: a plain block
  ASSERT_NE(c, nullptr);
  std::memset(c, 1, kMin);
  EXPECT_EQ(pool.slab_bytes(), 0u);
  {
    BlockPool::Lease lease;
    pool.free(c, kMin);  // kept like any block of its class
    EXPECT_EQ(pool.held_bytes(), kMin);
    void* again = pool.allocate(kMin, 64);
    EXPECT_EQ(again, c);
    pool.free(again, kMin);
  }
  pool.release();  // freed as a plain block
  EXPECT_EQ(pool.held_bytes(), 0u);
  EXPECT_EQ(pool.slab_bytes(), 0u);
}

// SPARSEJIT_HUGE_PAGES=off: fresh blocks are still 2 MiB-aligned, advised against huge pages
// (where THP is "always", the kernel would use them unasked).
TEST(BlockPool, HugePagesOffLeavesBlocksUnadvised) {
  HugePageSetting off(sj::HugePagePolicy::kOff);
  void* p = sj::huge_page_allocate(3 * sj::kHugePageBytes);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % sj::kHugePageBytes, 0u);
  if (have_thp()) EXPECT_NE(vm_flags_of(p).find(" nh"), std::string::npos) << vm_flags_of(p);
  sj::huge_page_free(p, 3 * sj::kHugePageBytes);
}

// Huge blocks are the kernel's pages, not malloc's heap: freeing one unmaps it at once (so the
// next block can be made of those pages), and nothing of the mapping that aligned it is left.
TEST(BlockPool, AFreedHugeBlockIsUnmappedAtOnce) {
  if (sj::kUnderAsan) GTEST_SKIP() << "under AddressSanitizer huge blocks come from malloc";
  unsigned char v = 0;
  char* p = static_cast<char*>(sj::huge_page_allocate(sj::kHugePageBytes + 1));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % sj::kHugePageBytes, 0u);
  std::memset(p, 1, 2 * sj::kHugePageBytes);  // rounded up to whole huge pages
  EXPECT_EQ(mincore(p + sj::kHugePageBytes, 4096, &v), 0);
  // The aligning mapping's slack after the block was given back (the huge page below the
  // block, if any was cut off there, is not checked: another mapping may lie there anyway).
  EXPECT_EQ(mincore(p + 2 * sj::kHugePageBytes, 4096, &v), -1);
  sj::huge_page_free(p, sj::kHugePageBytes + 1);
  EXPECT_EQ(mincore(p, 4096, &v), -1);
  EXPECT_EQ(errno, ENOMEM);
}

// The adaptive policy: a probe that finds the first huge page cold (every probe, with a
// threshold of 0 ns) compares it with 4 KiB faults, timed on the block's second huge page
// (advised against huge pages). Where those are cheaper (0 ns), the rest of the block and every
// later block go without huge pages.
TEST(BlockPool, AColdHugePageTurnsTheAdviceOffWhereSmallPagesAreCheaper) {
  HugePageSetting cold(sj::HugePagePolicy::kAuto, 0, 0);
  char* p = static_cast<char*>(sj::huge_page_allocate(3 * sj::kHugePageBytes));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(sj::huge_page_policy(), sj::HugePagePolicy::kOff);
  if (have_thp()) {
    EXPECT_NE(vm_flags_of(p).find(" hg"), std::string::npos) << vm_flags_of(p);
    for (int h = 1; h < 3; ++h)
      EXPECT_NE(vm_flags_of(p + h * sj::kHugePageBytes).find(" nh"), std::string::npos)
          << h << ": " << vm_flags_of(p + h * sj::kHugePageBytes);
  }
  char* q = static_cast<char*>(sj::huge_page_allocate(sj::kHugePageBytes));
  ASSERT_NE(q, nullptr);
  if (have_thp()) EXPECT_NE(vm_flags_of(q).find(" nh"), std::string::npos) << vm_flags_of(q);
  std::memset(p, 1, 3 * sj::kHugePageBytes);  // every byte usable
  sj::huge_page_free(p, 3 * sj::kHugePageBytes);
  sj::huge_page_free(q, sj::kHugePageBytes);
}

// Where 4 KiB faults cost more than even a cold huge page (so on one VM measured here), the
// advice stays on for good: the rest of the block and later blocks are advised, unprobed.
TEST(BlockPool, AColdHugePageKeepsTheAdviceWhereSmallPagesCostMore) {
  HugePageSetting cold(sj::HugePagePolicy::kAuto, 0, int64_t(1) << 40);
  char* p = static_cast<char*>(sj::huge_page_allocate(3 * sj::kHugePageBytes));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(sj::huge_page_policy(), sj::HugePagePolicy::kOn);
  if (have_thp()) {
    EXPECT_NE(vm_flags_of(p).find(" hg"), std::string::npos) << vm_flags_of(p);
    EXPECT_NE(vm_flags_of(p + sj::kHugePageBytes).find(" nh"), std::string::npos)  // the sample
        << vm_flags_of(p + sj::kHugePageBytes);
    EXPECT_NE(vm_flags_of(p + 2 * sj::kHugePageBytes).find(" hg"), std::string::npos)
        << vm_flags_of(p + 2 * sj::kHugePageBytes);
  }
  char* q = static_cast<char*>(sj::huge_page_allocate(sj::kHugePageBytes));
  ASSERT_NE(q, nullptr);
  if (have_thp()) EXPECT_NE(vm_flags_of(q).find(" hg"), std::string::npos) << vm_flags_of(q);
  std::memset(p, 1, 3 * sj::kHugePageBytes);
  sj::huge_page_free(p, 3 * sj::kHugePageBytes);
  sj::huge_page_free(q, sj::kHugePageBytes);
}

// A cold probe of a one-huge-page block has nothing to compare against: no decision yet. With
// the 4 KiB faults measured for real, a larger block decides one way or the other.
TEST(BlockPool, AColdProbeDecidesOnlyWithASecondHugePageToSample) {
  HugePageSetting cold(sj::HugePagePolicy::kAuto, 0);
  void* one = sj::huge_page_allocate(sj::kHugePageBytes);
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(sj::huge_page_policy(), sj::HugePagePolicy::kAuto);
  char* two = static_cast<char*>(sj::huge_page_allocate(2 * sj::kHugePageBytes));
  ASSERT_NE(two, nullptr);
  EXPECT_NE(sj::huge_page_policy(), sj::HugePagePolicy::kAuto);
  std::memset(two, 1, 2 * sj::kHugePageBytes);
  sj::huge_page_free(one, sj::kHugePageBytes);
  sj::huge_page_free(two, 2 * sj::kHugePageBytes);
}

// A warm probe (any fault under a threshold no fault reaches) keeps the advice on.
TEST(BlockPool, AWarmHugePageKeepsTheAdvice) {
  HugePageSetting warm(sj::HugePagePolicy::kAuto, int64_t(1) << 62);
  void* p = sj::huge_page_allocate(2 * sj::kHugePageBytes);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(sj::huge_page_policy(), sj::HugePagePolicy::kAuto);
  if (have_thp()) EXPECT_NE(vm_flags_of(p).find(" hg"), std::string::npos) << vm_flags_of(p);
  sj::huge_page_free(p, 2 * sj::kHugePageBytes);
}

TEST(BlockPool, AFreedBlockIsHandedOutAgainForItsSizeClass) {
  BlockPool pool(16 * kMin);
  void* a = pool.allocate(kMin + 100, 64);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  std::memset(a, 1, kMin + 100);
  pool.free(a, kMin + 100);
  EXPECT_EQ(pool.held_bytes(), 2 * kMin);
  void* b = pool.allocate(2 * kMin - 64, 64);  // same class
  EXPECT_EQ(b, a);
  EXPECT_EQ(pool.held_bytes(), 0u);
  void* c = pool.allocate(kMin + 100, 64);  // the bin is empty now
  EXPECT_NE(c, a);
  void* d = pool.allocate(kMin / 2, 64);  // small: never pooled
  pool.free(d, kMin / 2);
  EXPECT_EQ(pool.held_bytes(), 0u);
  pool.free(b, 2 * kMin - 64);
  pool.free(c, kMin + 100);
  EXPECT_EQ(pool.held_bytes(), 4 * kMin);
  pool.release();
  EXPECT_EQ(pool.held_bytes(), 0u);
}

TEST(BlockPool, HoldsNoMoreThanItsLimit) {
  BlockPool pool(5 * kMin);
  std::vector<void*> blocks;
  for (int k = 0; k < 8; ++k) blocks.push_back(pool.allocate(kMin, 64));
  for (void* p : blocks) pool.free(p, kMin);
  EXPECT_EQ(pool.held_bytes(), 5 * kMin);
  void* big = pool.allocate(8 * kMin, 64);  // a class above the limit is never kept
  pool.free(big, 8 * kMin);
  EXPECT_EQ(pool.held_bytes(), 5 * kMin);
  BlockPool off(0);  // SPARSEJIT_POOL_MB=0
  void* p = off.allocate(kMin, 64);
  off.free(p, kMin);
  EXPECT_EQ(off.held_bytes(), 0u);
}

TEST(BlockPool, WhenFullTheBlocksFreedLongestAgoGo) {
  BlockPool pool(2 * kMin);
  void* a = pool.allocate(kMin, 64);
  void* b = pool.allocate(kMin, 64);
  void* c = pool.allocate(kMin, 64);
  pool.free(a, kMin);
  pool.free(b, kMin);
  pool.free(c, kMin);  // a is dropped to make room
  EXPECT_EQ(pool.held_bytes(), 2 * kMin);
  EXPECT_EQ(pool.allocate(kMin, 64), c);  // the most recently freed first
  EXPECT_EQ(pool.allocate(kMin, 64), b);
  EXPECT_EQ(pool.held_bytes(), 0u);
  pool.free(b, kMin);
  pool.free(c, kMin);
}

// A miss for a large class gives back the kept blocks freed longest ago, as many as the new
// block needs, before it is allocated (their pages are then the fresh block's); slab pieces
// stay. A class whose blocks went so and that misses again takes nothing, so two problems used
// in turn end up both kept.
TEST(BlockPool, AMissForALargeClassGivesBackTheOldestKeptBlocksOnce) {
  constexpr size_t H = sj::kHugePageBytes;
  BlockPool pool(64 * H);
  void* piece = pool.allocate(kMin, 64);
  void* a = pool.allocate(4 * H, 64);
  void* b = pool.allocate(4 * H, 64);
  pool.free(piece, kMin);
  pool.free(a, 4 * H);
  pool.free(b, 4 * H);
  EXPECT_EQ(pool.held_bytes(), 8 * H + kMin);
  void* y = pool.allocate(3 * H, 64);  // another class: a (freed first) is enough room
  EXPECT_EQ(pool.held_bytes(), 4 * H + kMin);
  EXPECT_EQ(pool.allocate(4 * H, 64), b);  // b was kept
  pool.free(b, 4 * H);
  pool.free(y, 3 * H);
  EXPECT_EQ(pool.held_bytes(), 7 * H + kMin);
  void* z = pool.allocate(6 * H, 64);  // b and y both go for it
  EXPECT_EQ(pool.held_bytes(), kMin);
  pool.free(z, 6 * H);
  void* b2 = pool.allocate(4 * H, 64);  // b's class again: z stays
  void* y2 = pool.allocate(3 * H, 64);  // and y's
  EXPECT_EQ(pool.held_bytes(), 6 * H + kMin);
  pool.free(b2, 4 * H);
  pool.free(y2, 3 * H);
  // In turn from now on: every class is handed its own block again.
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(pool.allocate(6 * H, 64), z);
    EXPECT_EQ(pool.allocate(4 * H, 64), b2);
    EXPECT_EQ(pool.allocate(3 * H, 64), y2);
    EXPECT_EQ(pool.held_bytes(), kMin);
    pool.free(z, 6 * H);
    pool.free(b2, 4 * H);
    pool.free(y2, 3 * H);
  }
  EXPECT_EQ(pool.allocate(kMin, 64), piece);  // the slab piece was never given back
  pool.free(piece, kMin);
  pool.release();
  EXPECT_EQ(pool.held_bytes(), 0u);
}

// A kept block over twice what a miss still needs stays: a 2 MiB miss does not unmap a large
// result that its own next call would fault in again. And however many classes are used in
// turn, the pool ends up keeping them all: a class remembers that it lost its blocks until it
// misses itself (a list of the last 16 such classes made 18 in turn miss on every call).
TEST(BlockPool, AMissSparesLargeBlocksAndClassesInTurnEndUpKept) {
  constexpr size_t H = sj::kHugePageBytes;
  HugePageSetting off(sj::HugePagePolicy::kOff);  // nothing touched: the blocks stay virtual
  BlockPool pool(512 * H);
  void* big = pool.allocate(40 * H, 64);
  pool.free(big, 40 * H);
  void* small = pool.allocate(H, 64);
  EXPECT_EQ(pool.held_bytes(), 40 * H);
  pool.free(small, H);
  EXPECT_EQ(pool.allocate(40 * H, 64), big);
  pool.free(big, 40 * H);
  pool.release();
  // 18 classes of 96 down to 2 MiB, 560 MiB in all, each allocated and freed in turn (each
  // miss of the first round takes the block before it, at most twice its size).
  std::vector<size_t> sizes;
  for (size_t mib : {96, 80, 64, 56, 48, 40, 32, 28, 24, 20, 16, 14, 12, 10, 8, 6, 4, 2}) {
    sizes.push_back(mib << 20);
    ASSERT_EQ(BlockPool::block_size(mib << 20), mib << 20);
  }
  std::vector<void*> got(sizes.size());
  for (int round = 0; round < 4; ++round)
    for (size_t i = 0; i < sizes.size(); ++i) {
      void* p = pool.allocate(sizes[i], 64);
      ASSERT_NE(p, nullptr);
      if (round >= 2) EXPECT_EQ(p, got[i]) << "round " << round << ", class " << (sizes[i] >> 20) << " MiB";
      got[i] = p;
      pool.free(p, sizes[i]);
    }
  EXPECT_EQ(pool.held_bytes(), size_t(560) << 20);
  pool.release();
}

// Which huge pages of [p, p + n) have all their 4 KiB pages in memory: '#' all, '.' none, '~' some.
std::string huge_pages_in_memory(const void* p, size_t n) {
  constexpr size_t per = sj::kHugePageBytes / 4096;
  std::vector<unsigned char> v(n / 4096);
  if (mincore(const_cast<void*>(p), n, v.data()) != 0) return "unmapped";
  std::string out;
  for (size_t u = 0; u < n / sj::kHugePageBytes; ++u) {
    size_t in = 0;
    for (size_t i = u * per; i < (u + 1) * per; ++i) in += v[i] & 1u;
    out += in == 0 ? '.' : in == per ? '#' : '~';
  }
  return out;
}

// A miss for a large class is made of the pages in memory of the blocks it takes: they are
// moved (their bytes come along, nothing is faulted in), first to first; a huge page of a taken
// block that is only partly in memory is unmapped with the rest of that block.
TEST(BlockPool, AMissIsMadeOfTheTakenBlocksPagesInMemory) {
  if (sj::kUnderAsan) GTEST_SKIP() << "under AddressSanitizer huge blocks come from malloc";
  constexpr size_t H = sj::kHugePageBytes;
  HugePageSetting off(sj::HugePagePolicy::kOff);  // 4 KiB pages: one touched byte faults in one
  BlockPool pool(64 * H);
  char* a = static_cast<char*>(pool.allocate(4 * H, 64));
  char* b = static_cast<char*>(pool.allocate(2 * H, 64));
  ASSERT_TRUE(a && b);
  std::memset(a, 'a', H);
  std::memset(a + H, 'b', H);
  a[2 * H] = 'c';  // one 4 KiB page of the third huge page
  std::memset(b + H, 'd', H);
  EXPECT_EQ(huge_pages_in_memory(a, 4 * H), "##~.");
  EXPECT_EQ(huge_pages_in_memory(b, 2 * H), ".#");
  pool.free(a, 4 * H);
  pool.free(b, 2 * H);
  char* c = static_cast<char*>(pool.allocate(8 * H, 64));  // takes a, then b
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(pool.held_bytes(), 0u);
  EXPECT_EQ(huge_pages_in_memory(c, 8 * H), "###.....");
  EXPECT_EQ(c[0], 'a');
  EXPECT_EQ(c[H - 1], 'a');
  EXPECT_EQ(c[H], 'b');
  EXPECT_EQ(c[2 * H + 5], 'd');
  EXPECT_EQ(huge_pages_in_memory(a, 4 * H), "unmapped");
  EXPECT_EQ(huge_pages_in_memory(b, 2 * H), "unmapped");
  pool.free(c, 8 * H);
  // a's class lost its block; missing again right away it would take none (problems in
  // turn), but long after (more frees than a round of all kept blocks) it takes blocks again.
  for (int i = 0; i < 40; ++i) pool.free(pool.allocate(3 * H, 64), 3 * H);
  EXPECT_EQ(pool.held_bytes(), 11 * H);
  void* a2 = pool.allocate(4 * H, 64);
  EXPECT_LT(pool.held_bytes(), 11 * H);
  pool.free(a2, 4 * H);
  pool.release();
}

// A call whose first miss took an old block of its second block's class: the second miss
// still takes other blocks kept before that loss (never the first block's, freed after it).
TEST(BlockPool, AClassThatLostItsBlockTakesOnlyBlocksKeptBeforeTheLoss) {
  constexpr size_t H = sj::kHugePageBytes;
  HugePageSetting off(sj::HugePagePolicy::kOff);
  BlockPool pool(64 * H);
  void* six = pool.allocate(6 * H, 64);
  void* two = pool.allocate(2 * H, 64);
  pool.free(six, 6 * H);
  pool.free(two, 2 * H);
  void* four = pool.allocate(4 * H, 64);  // takes six, the oldest
  EXPECT_EQ(pool.held_bytes(), 2 * H);
  void* six2 = pool.allocate(6 * H, 64);  // six's class lost its block just now: takes two
  EXPECT_EQ(pool.held_bytes(), 0u);
  pool.free(four, 4 * H);
  pool.free(six2, 6 * H);
  void* two2 = pool.allocate(2 * H, 64);  // lost just now too, and four and six2 came after
  EXPECT_EQ(pool.held_bytes(), 10 * H);
  pool.free(two2, 2 * H);
  pool.release();
}

// A block handed out again has its huge pages that hold nothing in memory filled from blocks
// kept longer than it, never from blocks freed after it (those of problems used in turn).
TEST(BlockPool, AHitFillsItsEmptyPagesFromBlocksKeptLongerThanIt) {
  if (sj::kUnderAsan) GTEST_SKIP() << "under AddressSanitizer huge blocks come from malloc";
  constexpr size_t H = sj::kHugePageBytes;
  HugePageSetting off(sj::HugePagePolicy::kOff);
  BlockPool pool(64 * H);
  char* old = static_cast<char*>(pool.allocate(2 * H, 64));
  char* a = static_cast<char*>(pool.allocate(4 * H, 64));
  char* newer = static_cast<char*>(pool.allocate(2 * H, 64));
  ASSERT_TRUE(old && a && newer);
  std::memset(old, 'o', 2 * H);
  std::memset(a, 'a', H);  // an upper-bound result filled to a quarter
  std::memset(newer, 'n', 2 * H);
  pool.free(old, 2 * H);
  pool.free(a, 4 * H);
  pool.free(newer, 2 * H);
  EXPECT_EQ(pool.allocate(4 * H, 64), a);
  EXPECT_EQ(huge_pages_in_memory(a, 4 * H), "###.");  // old's two pages moved in
  EXPECT_EQ(a[H], 'o');
  EXPECT_EQ(a[3 * H - 1], 'o');
  EXPECT_EQ(pool.held_bytes(), 2 * H);
  EXPECT_EQ(pool.allocate(2 * H, 64), newer);  // freed after a: not taken
  EXPECT_EQ(huge_pages_in_memory(newer, 2 * H), "##");
  pool.free(a, 4 * H);
  pool.free(newer, 2 * H);
  // In turn, the hit of a block with an empty page takes nothing freed after it.
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(pool.allocate(4 * H, 64), a);
    EXPECT_EQ(huge_pages_in_memory(a, 4 * H), "###.");
    pool.free(a, 4 * H);
    EXPECT_EQ(pool.allocate(2 * H, 64), newer);
    pool.free(newer, 2 * H);
  }
  pool.release();
}

TEST(BlockPool, ThreadsAllocatingAndFreeingConcurrentlyNeverShareABlock) {
  BlockPool pool(64 * kMin);
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int k = 0; k < 200; ++k) {
        const size_t n = kMin / 2 + rng() % (16 * kMin);  // small, slab pieces and huge blocks
        auto* p = static_cast<unsigned char*>(pool.allocate(n, 64));
        const unsigned char mark = static_cast<unsigned char>(t * 50 + k);
        std::memset(p, mark, n);
        std::this_thread::yield();
        for (size_t i = 0; i < n; i += 4096) bad[t] += p[i] != mark;
        bad[t] += p[n - 1] != mark;
        pool.free(p, n);
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
  EXPECT_LE(pool.held_bytes(), 64 * kMin);
  pool.release();
  EXPECT_EQ(pool.slab_bytes(), 0u);
}

// A block freed while the last context ends is either kept and then released with the rest, or
// not kept: never left in the pool with no context alive (free() asks again under the lock;
// asking only before it left the block of a free that lost the race kept until some later
// context ended). The two threads are released at once, many times, to meet in that window.
TEST(BlockPool, ABlockFreedAsTheLastContextEndsIsNotKept) {
  if (BlockPool::live_leases() != 0) GTEST_SKIP() << "another context is alive";
  BlockPool& pool = BlockPool::global();
  if (pool.limit() < 64 * kMin) GTEST_SKIP() << "pool limited by SPARSEJIT_POOL_MB";
  constexpr int kRounds = 3000;
  const size_t held0 = pool.held_bytes(), slabs0 = pool.slab_bytes();  // (blocks others still use)
  std::atomic<int> round{-1};
  std::atomic<int> freed{-1};
  void* block = nullptr;
  size_t bytes = 0;
  std::thread freer([&] {
    for (int r = 0; r < kRounds; ++r) {
      int seen;
      while ((seen = round.load(std::memory_order_acquire)) < r) std::this_thread::yield();
      if (seen == kRounds) return;  // stopped early
      for (int spin = 0; spin < r % 97; ++spin) asm volatile("");  // sweeps the two threads' offset
      pool.free(block, bytes);
      freed.store(r, std::memory_order_release);
    }
  });
  int kept_after = 0;
  for (int r = 0; r < kRounds; ++r) {
    auto lease = std::make_unique<BlockPool::Lease>();
    bytes = r % 2 ? kMin : 4 * sj::kHugePageBytes;  // a slab piece or a plain huge block
    block = pool.allocate(bytes, 64);
    if (!block) {
      ADD_FAILURE() << "out of memory in round " << r;
      round.store(kRounds, std::memory_order_release);
      break;
    }
    round.store(r, std::memory_order_release);
    lease.reset();  // the last lease: releases the pool
    while (freed.load(std::memory_order_acquire) != r) std::this_thread::yield();
    kept_after += pool.held_bytes() != held0 || pool.slab_bytes() != slabs0;
    pool.release();  // so that one lost race does not count again
  }
  freer.join();
  EXPECT_EQ(kept_after, 0) << "rounds that left a block kept with no context alive";
}

// Through the C API: a destroyed result's block serves the next call's result, the results
// stay right, and destroying the last context gives the blocks back.
TEST(BlockPool, ResultsOfRepeatedCallsReuseBlocksWhileAContextLives) {
  if (BlockPool::global().limit() < 64 * kMin) GTEST_SKIP() << "pool limited by SPARSEJIT_POOL_MB";
  const bool only_context = BlockPool::live_leases() == 0;  // other tests may keep one
  sj_context* ctx = nullptr;
  ASSERT_EQ(sj_context_create(nullptr, &ctx), SJ_OK);
  // A 200x200 all-ones matrix times itself: every entry is 200 (40000 entries: > 256 KiB of values).
  const int64_t n = 200;
  std::vector<int64_t> pos(n + 1);
  std::vector<int32_t> crd(n * n);
  std::vector<double> val(n * n, 1.0);
  for (int64_t i = 0; i <= n; ++i) pos[i] = i * n;
  for (int64_t p = 0; p < n * n; ++p) crd[p] = static_cast<int32_t>(p % n);
  sj_tensor* A = nullptr;
  ASSERT_EQ(sj_tensor_create_csr(ctx, n, n, SJ_INDEX_INT32, SJ_VALUE_F64, pos.data(), crd.data(), val.data(), 0, &A),
            SJ_OK);
  const void* previous = nullptr;
  for (int round = 0; round < 3; ++round) {
    sj_tensor* C = nullptr;
    ASSERT_EQ(sj_spgemm(ctx, A, A, nullptr, &C), SJ_OK);
    const void* v = nullptr;
    int64_t len = 0;
    ASSERT_EQ(sj_tensor_get_values(C, &v, &len), SJ_OK);
    ASSERT_EQ(len, n * n);
    for (int64_t p = 0; p < len; ++p) ASSERT_EQ(static_cast<const double*>(v)[p], double(n)) << p;
    if (round > 0) EXPECT_EQ(v, previous) << "the values block of the destroyed result is reused";
    previous = v;
    sj_tensor_destroy(C);
    EXPECT_GE(BlockPool::global().held_bytes(), BlockPool::block_size(sizeof(double) * n * n));
  }
  sj_tensor_destroy(A);
  ASSERT_EQ(sj_context_destroy(ctx), SJ_OK);
  if (only_context) {
    EXPECT_EQ(BlockPool::global().held_bytes(), 0u);
    EXPECT_EQ(BlockPool::global().slab_bytes(), 0u);
  }
}

}  // namespace
