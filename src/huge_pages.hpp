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
// (kAuto): each fresh block's first huge page, unless pages of kept blocks were moved into it
// (huge_page_fill), is faulted in at once and timed; a warm one
// (~0.1 ms) keeps the advice. One over a millisecond is set against 4 KiB faults timed on the
// block's second huge page (the median of 31, times 512), once: where huge pages are still
// the cheaper, they stay advised for the rest of the process (kOn); where not, the advice is
// off for the rest of that block and every later block (kOff).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

namespace sj {

inline constexpr size_t kHugePageBytes = size_t(2) << 20;  // x86-64's transparent huge page

// SPARSEJIT_HUGE_PAGES: auto (default), on (always advise, never probe), off (advise every
// block MADV_NOHUGEPAGE, so that no huge pages back it even where THP is "always").
enum class HugePagePolicy : uint8_t { kAuto, kOn, kOff };

// The policy now: kAuto becomes kOn or kOff once a probe found a cold huge page.
HugePagePolicy huge_page_policy();

// A block from huge_page_allocate: where it starts, and its size as it was asked for.
struct HugeBlock {
  void* p;
  size_t bytes;
};

// `bytes` rounded up to whole huge pages (at least one), 2 MiB-aligned and advised as the policy
// says; null when out of memory (or when a failed move left a hole in it). Mapped from the
// kernel, not malloc's heap: freeing it unmaps it at once (with aligned_alloc, whether a freed
// block went back to the kernel depended on glibc's moving mmap threshold). `made_of`: blocks
// whose pages the new one takes (huge_page_fill) before anything touches it; they are gone
// afterwards, whatever is returned. Under AddressSanitizer from malloc, whose redzones and
// quarantine report overruns and uses after free.
void* huge_page_allocate(size_t bytes, std::span<const HugeBlock> made_of = {});
// Frees a huge_page_allocate block; `bytes` as it was asked for.
void huge_page_free(void* p, size_t bytes);
// The bytes of the block's huge pages that have no 4 KiB page in memory (mincore): what a
// call writing all of it would fault in. 0 under AddressSanitizer.
size_t huge_page_empty_bytes(void* p, size_t bytes);
// Moves the huge pages of the blocks `from` that are all in memory into the huge pages of `to`
// that have none, first to first (mremap: no copy, no fault), and unmaps the rest of `from`,
// which is gone afterwards; moved pages are advised as the policy says now. Why: on this VM a
// first touch of memory the host has reclaimed costs ~3-5 ms per 2 MiB (26 MiB: ~40 ms fresh,
// ~1.5 ms right after 64 MiB were unmapped, 0.2 ms moved), so a block is best made of pages the
// process holds (block_pool.cpp). False when a failed move left a hole in `to` that could not
// be mapped again: `to` must then be unmapped, not used. Under AddressSanitizer (blocks from
// malloc) nothing moves and `from` is freed.
bool huge_page_fill(void* to, size_t to_bytes, std::span<const HugeBlock> from);

// Tests: set the policy, and the fault time over which a probe calls a huge page cold (0
// makes every probe cold; the default is 1 ms).
void set_huge_page_policy_for_testing(HugePagePolicy p);
void set_huge_page_cold_fault_ns_for_testing(int64_t ns);
// Tests: the time of a 4 KiB fault that a cold probe compares against (-1, the default:
// measured).
void set_small_page_fault_ns_for_testing(int64_t ns);

}  // namespace sj
