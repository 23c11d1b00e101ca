// Memory backed by transparent huge pages, for the large blocks of results and scratch
// (src/block_pool.hpp), which a process's first call faults in fresh.
//
// Why: on this VM the first touch of a 4 KiB page costs ~15 us: a fresh 8 MiB block took 28-34
// ms of CPU in 4 KiB pages, against 0.6-0.9 ms in 2 MiB pages. (Steady-state kernels did not
// gain measurably from huge-page accumulators: SpMSpV push on a 600k-row A, 1 thread.)
// madvise(MADV_HUGEPAGE) is a hint: where THP is off the memory is ordinary.
#pragma once
#include <cstddef>

namespace sj {

inline constexpr size_t kHugePageBytes = size_t(2) << 20;  // x86-64's transparent huge page

// `bytes` rounded up to whole huge pages, 2 MiB-aligned and advised; null when out of memory.
// Freed with std::free.
void* huge_page_allocate(size_t bytes);

}  // namespace sj
