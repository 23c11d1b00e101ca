// The time-stamp-counter clock behind explain's execute times (src/cycle_clock.hpp): its
// conversion to milliseconds agrees with steady_clock. A sleep is never shorter than asked,
// so the lower bound is exact; the upper bound is loose, for a loaded machine.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "src/cycle_clock.hpp"

namespace {

TEST(CycleClock, MillisecondsAgreeWithSteadyClock) {
  sj::CycleClock::start();
  for (int ms : {5, 30}) {  // the first before the rate settles (measured afresh), then after
    const auto s0 = std::chrono::steady_clock::now();
    const uint64_t c0 = sj::CycleClock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    const uint64_t c1 = sj::CycleClock::now();
    const double steady = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s0).count();
    const double cycles = sj::CycleClock::to_ms(c1 - c0);
    EXPECT_GE(cycles, 0.9 * ms) << "slept " << ms << " ms";
    EXPECT_LE(cycles, 1.1 * steady + 1.0) << "slept " << ms << " ms, steady_clock saw " << steady;
  }
  EXPECT_EQ(sj::CycleClock::to_ms(0), 0.0);
}

}  // namespace
