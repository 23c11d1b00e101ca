// Memory backed by transparent huge pages, for the large blocks of results and scratch
// (src/block_pool.hpp), which a process's first call faults in fresh.
//
// Why: on the VM first measured, the first touch of a 4 KiB page costs ~2-15 us: a fresh
// 27 MiB block took 14-20 ms to fault in 4 KiB pages, against ~2 ms in 2 MiB pages when the
// hypervisor still backs them. (Steady-state kernels did not gain measurably from huge-page accumulators:
// SpMSpV push on a 600k-row A, 1 thread.) madvise(MADV_HUGEPAGE) is a hint: where THP is off
// the memory is ordinary.
//
// But a huge page the guest has not used for a while is "cold": its memory was handed back to
// the host (virtio-balloon free page reporting reports free 2 MiB blocks), and faulting it in
// again costs more. How much more depends on the VM: on one, 3-7 ms per 2 MiB, ~3-5x the same
// 2 MiB in 4 KiB faults (14-20 ms for 27 MiB); on another (AMD EPYC with AVX-512), 1.1-3.4 ms,
// while 4 KiB faults cost ~10 us each, ~5 ms per 2 MiB, every time. So the advice is adaptive
// (kAuto): each fresh block's first huge page is faulted in at once and timed; a warm one
// (~0.1 ms) keeps the advice. One over a millisecond is set against 4 KiB faults timed on the
// block's second huge page (the median of 31, times 512), once: where huge pages are still
// the cheaper, they stay advised for the rest of the process (kOn); where not, the advice is
// off for the rest of that block and every later block (kOff).
#pragma once
#include <cstddef>
#include <cstdint>

namespace sj {

inline constexpr size_t kHugePageBytes = size_t(2) << 20;  // x86-64's transparent huge page

// SPARSEJIT_HUGE_PAGES: auto (default), on (always advise, never probe), off (advise every
// block MADV_NOHUGEPAGE, so that no huge pages back it even where THP is "always").
enum class HugePagePolicy : uint8_t { kAuto, kOn, kOff };

// The policy now: kAuto becomes kOn or kOff once a probe found a cold huge page.
HugePagePolicy huge_page_policy();

// `bytes` rounded up to whole huge pages (at least one), 2 MiB-aligned and advised as the policy
// says; null when out of memory. Mapped from the kernel, not malloc's heap: freeing it unmaps it
// at once, so a block allocated next can be made of those pages, still backed by the host
// (block_pool.cpp's make_room_for relies on this; with aligned_alloc, whether a freed block
// went back to the kernel depended on glibc's moving mmap threshold). Under AddressSanitizer
// from malloc, whose redzones and quarantine report overruns and uses after free.
void* huge_page_allocate(size_t bytes);
// Frees a huge_page_allocate block; `bytes` as it was asked for.
void huge_page_free(void* p, size_t bytes);

// Tests: set the policy, and the fault time over which a probe calls a huge page cold (0
// makes every probe cold; the default is 1 ms).
void set_huge_page_policy_for_testing(HugePagePolicy p);
void set_huge_page_cold_fault_ns_for_testing(int64_t ns);
// Tests: the time of a 4 KiB fault that a cold probe compares against (-1, the default:
// measured).
void set_small_page_fault_ns_for_testing(int64_t ns);

}  // namespace sj
