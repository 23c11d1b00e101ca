// Counts changed on every call: a plan's executions, a handle's SpMSpV calls, a context's live
// tensors, the drop-in calls that reused a plan. A locked add costs a few ns here: the four of
// a tiny SpMSpV through a plan (GD98_a, x at 1%) were ~13 of its ~121 ns. In a process that has
// never started a second thread (src/single_threaded.hpp) a count takes a plain load and store;
// otherwise it stays one atomic add.
#pragma once
#include <atomic>
#include <cstdint>

#include "src/single_threaded.hpp"

namespace sj {

// n += delta, exact under any number of threads; returns the count before.
inline int64_t count_add(std::atomic<int64_t>& n, int64_t delta = 1) {
  constexpr auto relaxed = std::memory_order_relaxed;
  if (process_is_single_threaded()) {
    const int64_t before = n.load(relaxed);
    n.store(before + delta, relaxed);
    return before;
  }
  return n.fetch_add(delta, relaxed);
}

}  // namespace sj
