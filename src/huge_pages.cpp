#include "src/huge_pages.hpp"

#include <atomic>
#include <chrono>

#include <sys/mman.h>

#include "src/environment.hpp"

namespace sj {
namespace {

HugePagePolicy policy_from_environment() {
  switch (env::choice("SPARSEJIT_HUGE_PAGES", {"auto", "on", "off"}, "auto").value_or(0)) {
    case 1: return HugePagePolicy::kOn;
    case 2: return HugePagePolicy::kOff;
    default: return HugePagePolicy::kAuto;
  }
}

std::atomic<HugePagePolicy>& policy() {
  static std::atomic<HugePagePolicy> p{policy_from_environment()};
  return p;
}

std::atomic<int64_t> cold_fault_ns{1'000'000};

// Faults in the first huge page of a fresh advised block and times it; a cold one turns the
// advice off for the rest of the block (faulted in 4 KiB pages) and for later blocks.
void probe(char* p, size_t rounded) {
  const auto t0 = std::chrono::steady_clock::now();
  *static_cast<volatile char*>(p) = 0;
  const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  if (ns < cold_fault_ns.load(std::memory_order_relaxed)) return;
  HugePagePolicy expected = HugePagePolicy::kAuto;
  policy().compare_exchange_strong(expected, HugePagePolicy::kOff);
#if defined(MADV_NOHUGEPAGE)
  if (rounded > kHugePageBytes) (void)madvise(p + kHugePageBytes, rounded - kHugePageBytes, MADV_NOHUGEPAGE);
#endif
}

}  // namespace

HugePagePolicy huge_page_policy() { return policy().load(std::memory_order_relaxed); }

void* huge_page_allocate(size_t bytes) {
  if (bytes > static_cast<size_t>(-1) - kHugePageBytes) return nullptr;
  const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void* p = std::aligned_alloc(kHugePageBytes, rounded);
  const HugePagePolicy now = huge_page_policy();
#if defined(MADV_HUGEPAGE)
  if (p && now != HugePagePolicy::kOff) {
    (void)madvise(p, rounded, MADV_HUGEPAGE);
    if (now == HugePagePolicy::kAuto) probe(static_cast<char*>(p), rounded);
  }
#endif
#if defined(MADV_NOHUGEPAGE)
  // Said explicitly: glibc may hand out memory an earlier block advised, and where THP is
  // "always" the kernel would use huge pages unasked.
  if (p && now == HugePagePolicy::kOff) (void)madvise(p, rounded, MADV_NOHUGEPAGE);
#endif
  return p;
}

void set_huge_page_policy_for_testing(HugePagePolicy p) { policy().store(p); }
void set_huge_page_cold_fault_ns_for_testing(int64_t ns) { cold_fault_ns.store(ns); }

}  // namespace sj
