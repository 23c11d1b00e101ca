// A cheap clock for the timings every execution records (explain's first and last execute
// times): the CPU's time-stamp counter. One rdtsc took 12.5 ns on this VM, against 33 ns for
// std::chrono::steady_clock::now() through the vDSO; two of those were ~8% of a repeated
// SpMSpV call on a tiny matrix. Sound on an invariant TSC (constant_tsc, nonstop_tsc), which
// x86-64 CPUs of the last decade have; the counter's rate is measured against steady_clock.
#pragma once
#include <cstdint>
#include <x86intrin.h>

namespace sj {

struct CycleClock {
  static uint64_t now() { return __rdtsc(); }
  // Milliseconds in `cycles` (a difference of two now()).
  static double to_ms(uint64_t cycles);
  // Records the origin the rate is measured from; called when a context is created, so that
  // the rate is measured over the whole time since.
  static void start();
};

}  // namespace sj
