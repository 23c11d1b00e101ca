#include "src/cycle_clock.hpp"

#include <atomic>
#include <chrono>

namespace sj {
namespace {

using Steady = std::chrono::steady_clock;

struct Origin {
  uint64_t cycles;
  Steady::time_point steady;
};
const Origin& origin() {
  static const Origin o{CycleClock::now(), Steady::now()};
  return o;
}

// Milliseconds per cycle, once measured over at least kSettled: before that, every conversion
// measures it afresh (reads both clocks; ~0.1% off after 50 us, and only for a process's
// first few milliseconds).
constexpr double kSettledMs = 20;
std::atomic<double> g_ms_per_cycle{0};

}  // namespace

void CycleClock::start() { (void)origin(); }

double CycleClock::to_ms(uint64_t cycles) {
  double rate = g_ms_per_cycle.load(std::memory_order_relaxed);
  if (rate == 0) {
    const Origin& o = origin();
    const uint64_t c = now();
    const double ms = std::chrono::duration<double, std::milli>(Steady::now() - o.steady).count();
    if (c <= o.cycles || ms <= 0) return 0;
    rate = ms / static_cast<double>(c - o.cycles);
    if (ms >= kSettledMs) g_ms_per_cycle.store(rate, std::memory_order_relaxed);
  }
  return rate * static_cast<double>(cycles);
}

}  // namespace sj
