// Counts changed on every call: a plan's executions, a handle's SpMSpV calls, a context's live
// tensors, the drop-in calls that reused a plan. A locked add costs a few ns here: the four of
// a tiny SpMSpV through a plan (GD98_a, x at 1%) were ~13 of its ~121 ns. A process that has
// never started a second thread cannot race, so there a count takes a plain load and store, as
// libstdc++'s shared_ptr does with its reference counts (glibc's __libc_single_threaded, which
// pthread_create clears before the new thread runs; threads made without it, as by a raw
// clone, would break shared_ptr too); otherwise it stays one atomic add.
#pragma once
#include <atomic>
#include <cstdint>
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define SJ_HAVE_SINGLE_THREADED 1
#endif

namespace sj {

// n += delta, exact under any number of threads; returns the count before.
inline int64_t count_add(std::atomic<int64_t>& n, int64_t delta = 1) {
  constexpr auto relaxed = std::memory_order_relaxed;
#ifdef SJ_HAVE_SINGLE_THREADED
  if (__libc_single_threaded) {
    const int64_t before = n.load(relaxed);
    n.store(before + delta, relaxed);
    return before;
  }
#endif
  return n.fetch_add(delta, relaxed);
}

}  // namespace sj
