// Picks the faster of two interchangeable ways of running a plan's kernel (both give the same
// result, bit for bit) by timing the plan's executions. Used where the winner depends on how
// well the CPU predicts a data-dependent branch, which no cheap statistic of the operands
// tells: Gustavson's "is this column new to the row" test is a coin flip on graphs and random
// matrices (a branch-free loop is ~1.3-2x faster there) but follows a pattern the predictor
// learns on banded, finite-element and small matrices (the branchy loop does less work and is
// ~1.2-1.4x faster).
//
// A plan's executions are the same work (same structure), so timing whole executions is a
// fair comparison. The first runs way 0 untimed (it pays for cold caches and for faulting in
// the result's pages, which would count against way 0); the next kTrials run the ways 0, 1,
// 1, 0, and every later one runs the way whose faster trial took fewer ticks. The faster
// trial, not the sum: on a shared machine one trial in a few is stretched by a preemption or
// by faulting in fresh pages (seen: 3 ms against 0.25 ms on cage8), and a sum would let that
// one trial decide.
// Comparing the ways on alternate blocks of rows within one product was tried first and
// misled: neighbouring blocks differ in cost, and on small products alternating stops the
// branch predictor from learning the pattern the branchy way relies on. A one-off product
// runs way 0. Thread-safe (a plan may execute on several threads at once).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>

#include "src/cycle_clock.hpp"

namespace sj {

class TimedChoice {
 public:
  static constexpr int kTrials = 4;

  // The way the next execution runs; *timed says whether to time it and report to end().
  int begin(bool* timed) const {
    const int s = settled_.load(std::memory_order_acquire);
    if (s >= 0) {
      *timed = false;
      return s;
    }
    std::lock_guard lock(mutex_);
    // The first execution warms up, untimed; past the trials (still running elsewhere) the
    // usual way runs, untimed.
    if (started_ == 0 || started_ > kTrials) {
      started_ = started_ == 0 ? 1 : started_;
      *timed = false;
      return 0;
    }
    *timed = true;
    static constexpr int kOpening[kTrials] = {0, 1, 1, 0};
    return kOpening[started_++ - 1];
  }

  // Records a timed execution of `way` that took `ticks`; the last trial settles the choice.
  void end(int way, uint64_t ticks) const {
    std::lock_guard lock(mutex_);
    ticks_[way] = std::min(ticks_[way], ticks);
    if (++ended_ == kTrials) settle_locked(ticks_[1] < ticks_[0] ? 1 : 0, 0);
  }

  // Settles on `way`, unless already settled: at the last trial, or without trials for a
  // `reason` of the user's (a product too small to time fairly, say), which explain shows.
  void settle(int way, int reason = 0) const {
    std::lock_guard lock(mutex_);
    settle_locked(way, reason);
  }

  // The way every execution runs from now on, or -1 while the trials run.
  int settled() const { return settled_.load(std::memory_order_acquire); }

  // Where the choice stands, for explain.
  struct Snapshot {
    int settled = -1;       // as settled()
    int trials_done = 0;    // timed executions reported (kTrials when settled by timing)
    uint64_t ticks[2] = {0, 0};  // each way's fastest trial (0: none yet)
    int reason = 0;              // settle()'s reason when settled without the trials
  };
  Snapshot snapshot() const {
    std::lock_guard lock(mutex_);
    auto shown = [](uint64_t t) { return t == kNone ? 0 : t; };
    return {settled_.load(std::memory_order_acquire), ended_, {shown(ticks_[0]), shown(ticks_[1])}, reason_};
  }

  // The counter once every earlier instruction has executed (lfence: a bare rdtsc runs ahead
  // of the work it ends).
  static uint64_t now() {
    _mm_lfence();
    return CycleClock::now();
  }

 private:
  // settle() with mutex_ held (end() settles from inside it).
  void settle_locked(int way, int reason) const {
    int expected = -1;
    if (settled_.compare_exchange_strong(expected, way, std::memory_order_acq_rel)) reason_ = reason;
  }

  mutable std::mutex mutex_;
  mutable std::atomic<int> settled_{-1};
  mutable int started_ = 0, ended_ = 0, reason_ = 0;
  static constexpr uint64_t kNone = ~uint64_t{0};
  mutable uint64_t ticks_[2] = {kNone, kNone};
};

}  // namespace sj
