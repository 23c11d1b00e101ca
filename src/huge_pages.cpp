#include "src/huge_pages.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include <sys/mman.h>

#include "src/environment.hpp"
#include "src/sanitizers.hpp"

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
std::atomic<int64_t> small_fault_ns_override{-1};  // tests: the 4 KiB fault time, not measured

constexpr size_t kSmallPageBytes = 4096;
constexpr int kSmallSamples = 31;  // 4 KiB faults timed; the median stands for all

int64_t elapsed_ns(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
}

// The median time of a first touch of a 4 KiB page, over the first pages of [p, p + 2 MiB)
// (advised against huge pages first). A median, so that one preemption does not decide.
int64_t small_fault_ns(char* p) {
#if defined(MADV_NOHUGEPAGE)
  (void)madvise(p, kHugePageBytes, MADV_NOHUGEPAGE);
#endif
  const int64_t forced = small_fault_ns_override.load(std::memory_order_relaxed);
  if (forced >= 0) return forced;
  std::array<int64_t, kSmallSamples> ns{};
  for (int i = 0; i < kSmallSamples; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    *static_cast<volatile char*>(p + static_cast<size_t>(i) * kSmallPageBytes) = 0;
    ns[static_cast<size_t>(i)] = elapsed_ns(t0);
  }
  std::nth_element(ns.begin(), ns.begin() + kSmallSamples / 2, ns.end());
  return ns[kSmallSamples / 2];
}

// Faults in the first huge page of a fresh advised block and times it. A warm one (under
// cold_fault_ns) changes nothing. A cold one is set against the same 2 MiB in 4 KiB faults,
// timed on the block's second huge page: where those cost more, huge pages stay advised from
// then on, cold or not (kOn); where they cost less, the rest of the block and every later
// block go without (kOff). Blocks of one huge page leave the decision to a larger one.
void probe(char* p, size_t rounded) {
  const auto t0 = std::chrono::steady_clock::now();
  *static_cast<volatile char*>(p) = 0;
  const int64_t huge_ns = elapsed_ns(t0);
  if (huge_ns < cold_fault_ns.load(std::memory_order_relaxed) || rounded < 2 * kHugePageBytes) return;
  const int64_t small_per_huge_ns = small_fault_ns(p + kHugePageBytes) * int64_t(kHugePageBytes / kSmallPageBytes);
  const bool huge_cheaper = huge_ns <= small_per_huge_ns;
  HugePagePolicy expected = HugePagePolicy::kAuto;
  policy().compare_exchange_strong(expected, huge_cheaper ? HugePagePolicy::kOn : HugePagePolicy::kOff);
#if defined(MADV_NOHUGEPAGE)
  if (!huge_cheaper && rounded > 2 * kHugePageBytes)
    (void)madvise(p + 2 * kHugePageBytes, rounded - 2 * kHugePageBytes, MADV_NOHUGEPAGE);
#endif
}

}  // namespace

HugePagePolicy huge_page_policy() { return policy().load(std::memory_order_relaxed); }

namespace {
// What a block of `bytes` occupies: whole huge pages, at least one.
size_t mapped_bytes(size_t bytes) {
  return std::max(kHugePageBytes, (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes);
}

// `rounded` bytes at a 2 MiB boundary: a mapping one huge page longer, its ends cut off. Under
// AddressSanitizer from malloc instead, so that its redzones and quarantine still report a
// write past a block or a use after it was freed (mappings sit next to each other, and an
// unmapped range is soon mapped again).
void* map_aligned(size_t rounded) {
  if constexpr (kUnderAsan) return std::aligned_alloc(kHugePageBytes, rounded);
  void* m = mmap(nullptr, rounded + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(m);
  const uintptr_t at = (start + kHugePageBytes - 1) & ~(uintptr_t{kHugePageBytes} - 1);
  if (at > start) munmap(m, at - start);
  const size_t tail = kHugePageBytes - (at - start);
  if (tail > 0) munmap(reinterpret_cast<void*>(at + rounded), tail);
  return reinterpret_cast<void*>(at);
}
}  // namespace

namespace {
enum class InMemory : uint8_t { kNone, kSome, kAll };

// For each huge page of [p, p + rounded): how many of its 4 KiB pages are in memory
// (mincore; kSome for all when it fails, so that nothing is moved into or out of them).
std::vector<InMemory> residency(void* p, size_t rounded) {
  constexpr size_t per = kHugePageBytes / kSmallPageBytes;
  std::vector<InMemory> huge(rounded / kHugePageBytes, InMemory::kSome);
  std::vector<unsigned char> small(rounded / kSmallPageBytes);
  if (mincore(p, rounded, small.data()) != 0) return huge;
  for (size_t u = 0; u < huge.size(); ++u) {
    size_t in = 0;
    for (size_t i = u * per; i < (u + 1) * per; ++i) in += small[i] & 1u;
    huge[u] = in == 0 ? InMemory::kNone : in == per ? InMemory::kAll : InMemory::kSome;
  }
  return huge;
}

// The advice of the policy now over [p, p + rounded).
void advise(void* p, size_t rounded, HugePagePolicy now) {
#if defined(MADV_HUGEPAGE)
  if (now != HugePagePolicy::kOff) (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
#if defined(MADV_NOHUGEPAGE)
  // Said explicitly: where THP is "always" the kernel would use huge pages unasked (and under
  // ASan, malloc may hand out memory an earlier block advised).
  if (now == HugePagePolicy::kOff) (void)madvise(p, rounded, MADV_NOHUGEPAGE);
#endif
}

// After a failed mremap onto `at`: Linux unmaps the target before it checks the source, so
// the hole is mapped again (never over another mapping). False when it could not be.
bool still_mapped(char* at) {
  void* m = mmap(at, kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (m == at) return true;
  if (m != MAP_FAILED) {  // a kernel before 4.17 took the address as a hint
    munmap(m, kHugePageBytes);
    return false;
  }
  return errno == EEXIST;  // the target was left as it was
}
}  // namespace

void* huge_page_allocate(size_t bytes, std::span<const HugeBlock> made_of) {
  if (bytes > static_cast<size_t>(-1) - 2 * kHugePageBytes) {
    huge_page_fill(nullptr, 0, made_of);
    return nullptr;
  }
  const size_t rounded = mapped_bytes(bytes);
  void* p = map_aligned(rounded);
  if (!p && !made_of.empty()) {  // the blocks to move are still mapped: without them, once more
    huge_page_fill(nullptr, 0, made_of);
    made_of = {};
    p = map_aligned(rounded);
  }
  const HugePagePolicy now = huge_page_policy();
  if (p) advise(p, rounded, now);
  if (!huge_page_fill(p, bytes, made_of)) {
    munmap(p, rounded);
    return nullptr;
  }
  // After the fill: a first huge page moved in is warm, and it is not fresh memory to judge.
  // (Only mapped memory is asked: malloc's, under ASan, may be in memory already.)
  const bool moved_in = p && !kUnderAsan && !made_of.empty() && residency(p, kHugePageBytes)[0] != InMemory::kNone;
  if (p && now == HugePagePolicy::kAuto && !moved_in) probe(static_cast<char*>(p), rounded);
  return p;
}

void huge_page_free(void* p, size_t bytes) {
  if (!p) return;
  if constexpr (kUnderAsan) std::free(p);
  else munmap(p, mapped_bytes(bytes));
}

size_t huge_page_empty_bytes(void* p, size_t bytes) {
  if (kUnderAsan || !p) return 0;
  const std::vector<InMemory> r = residency(p, mapped_bytes(bytes));
  return static_cast<size_t>(std::count(r.begin(), r.end(), InMemory::kNone)) * kHugePageBytes;
}

bool huge_page_fill(void* to, size_t to_bytes, std::span<const HugeBlock> from) {
  if (kUnderAsan || !to) {
    for (const HugeBlock& b : from) huge_page_free(b.p, b.bytes);
    return true;
  }
  char* const dst = static_cast<char*>(to);
  const std::vector<InMemory> d = from.empty() ? std::vector<InMemory>() : residency(dst, mapped_bytes(to_bytes));
  size_t j = 0;  // the next huge page of `to` that may be empty
  bool moved = false, whole = true;
  for (const HugeBlock& b : from) {
    char* const src = static_cast<char*>(b.p);
    const std::vector<InMemory> s = residency(src, mapped_bytes(b.bytes));
    for (size_t i = 0; i < s.size(); ++i) {
      char* const page = src + i * kHugePageBytes;
      if (whole && s[i] == InMemory::kAll) {
        while (j < d.size() && d[j] != InMemory::kNone) ++j;
        if (j < d.size()) {
          // MREMAP_FIXED replaces the empty page at the target; the source's range is left
          // unmapped, so it is not unmapped again below (another thread may map it meanwhile).
          char* const at = dst + j * kHugePageBytes;
          if (mremap(page, kHugePageBytes, kHugePageBytes, MREMAP_MAYMOVE | MREMAP_FIXED, at) != MAP_FAILED) {
            ++j;
            moved = true;
            continue;
          }
          whole = still_mapped(at);
          j = d.size();  // no more moves after a failure
        }
      }
      munmap(page, kHugePageBytes);
    }
  }
  // A moved page keeps its source's advice, which may predate the policy's decision.
  if (moved) advise(to, mapped_bytes(to_bytes), huge_page_policy());
  return whole;
}

void set_huge_page_policy_for_testing(HugePagePolicy p) { policy().store(p); }
void set_huge_page_cold_fault_ns_for_testing(int64_t ns) { cold_fault_ns.store(ns); }
void set_small_page_fault_ns_for_testing(int64_t ns) { small_fault_ns_override.store(ns); }

}  // namespace sj
