// The timed choice between two equivalent ways of running a plan's kernel
// (kernels/timed_choice.hpp): an untimed warm-up in way 0, then trials 0, 1, 1, 0, then the
// cheaper way for good; executions that start while the trials are out run way 0 untimed.
// The "executions" here spin, one way ten times as long as the other: a difference no
// scheduling noise on a loaded machine turns around.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/timed_choice.hpp"

namespace {

// Busy work: `units` x 1000 dependent increments.
void spin(int units) {
  volatile uint64_t x = 0;
  for (int i = 0; i < units * 1000; ++i) x = x + 1;
}

// Runs executions until the choice settles, way `slow` costing ten times the other; returns
// the ways run, in order.
std::vector<int> run_until_settled(const sj::TimedChoice& c, int slow) {
  std::vector<int> ways;
  while (c.settled() < 0 && ways.size() < 100) {
    bool timed = false;
    const int way = c.begin(&timed);
    const uint64_t t0 = sj::TimedChoice::now();
    spin(way == slow ? 200 : 20);
    if (timed) c.end(way, sj::TimedChoice::now() - t0);
    EXPECT_EQ(timed, !ways.empty()) << "only the first execution is untimed";
    ways.push_back(way);
  }
  return ways;
}

TEST(TimedChoice, TrialsThenTheCheaperWay) {
  for (int slow : {0, 1}) {
    const sj::TimedChoice c;
    EXPECT_EQ(c.settled(), -1);
    EXPECT_EQ(run_until_settled(c, slow), (std::vector<int>{0, 0, 1, 1, 0})) << "slow way " << slow;
    EXPECT_EQ(c.settled(), 1 - slow);
    for (int i = 0; i < 3; ++i) {
      bool timed = true;
      EXPECT_EQ(c.begin(&timed), 1 - slow);
      EXPECT_FALSE(timed);
    }
  }
}

TEST(TimedChoice, ExecutionsBeyondTheOutstandingTrialsRunWayZeroUntimed) {
  const sj::TimedChoice c;
  bool timed = true;
  c.begin(&timed);  // the warm-up
  std::vector<int> trial_ways;
  for (int i = 0; i < sj::TimedChoice::kTrials; ++i) {
    trial_ways.push_back(c.begin(&timed));
    EXPECT_TRUE(timed);
  }
  EXPECT_EQ(trial_ways, (std::vector<int>{0, 1, 1, 0}));
  EXPECT_EQ(c.begin(&timed), 0);  // all trials started, none ended: not settled
  EXPECT_FALSE(timed);
  for (int i = 0; i < sj::TimedChoice::kTrials; ++i) c.end(trial_ways[static_cast<size_t>(i)], trial_ways[static_cast<size_t>(i)] == 1 ? 10 : 1000);
  EXPECT_EQ(c.settled(), 1);
}

// One stretched trial (a preemption, fresh pages faulted in) does not decide: each way is
// judged by its faster trial.
TEST(TimedChoice, OneStretchedTrialDoesNotDecide) {
  const sj::TimedChoice c;
  bool timed = true;
  c.begin(&timed);  // the warm-up
  const uint64_t ticks[sj::TimedChoice::kTrials] = {50000, 200, 210, 100};  // ways 0, 1, 1, 0
  for (uint64_t t : ticks) c.end(c.begin(&timed), t);
  EXPECT_EQ(c.settled(), 0);
  const sj::TimedChoice::Snapshot s = c.snapshot();
  EXPECT_EQ(s.trials_done, sj::TimedChoice::kTrials);
  EXPECT_EQ(s.ticks[0], 100u);
  EXPECT_EQ(s.ticks[1], 200u);
}

TEST(TimedChoice, SettlingWithoutTrialsIsFinal) {
  const sj::TimedChoice c;
  c.settle(1, 7);
  c.settle(0, 3);  // a second settle changes nothing, its reason included
  bool timed = true;
  EXPECT_EQ(c.begin(&timed), 1);
  EXPECT_FALSE(timed);
  EXPECT_EQ(c.settled(), 1);
  EXPECT_EQ(c.snapshot().reason, 7);
  EXPECT_EQ(c.snapshot().trials_done, 0);
}

}  // namespace
