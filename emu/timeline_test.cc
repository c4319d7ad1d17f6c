// SPDX-License-Identifier: GPL-2.0-or-later
// The timeline's orders, in the shapes of Dolphin's CoreTiming tests (basic
// order, a shared slot, scheduling into the past, chained scheduling) and
// the cancellation a re-armed timer needs.
#include "emu/timeline.h"

#include <vector>

#include <gtest/gtest.h>

namespace topolab {
namespace {

// An arrival told apart by its sender field.
IpiInFlight tagged(unsigned tag) {
  IpiInFlight ipi;
  ipi.sender = tag;
  return ipi;
}

std::vector<unsigned> tags(const std::vector<IpiInFlight>& ipis) {
  std::vector<unsigned> out;
  for (const IpiInFlight& ipi : ipis) out.push_back(ipi.sender);
  return out;
}

TEST(Timeline, ArrivalsComeOutInTimeOrder) {
  Timeline t(2);
  t.schedule_arrival(30, 1, tagged(3));
  t.schedule_arrival(10, 1, tagged(1));
  t.schedule_arrival(20, 1, tagged(2));
  EXPECT_EQ(t.next_arrival(1), 10u);
  EXPECT_EQ(tags(t.take_arrivals(1, 25)), (std::vector<unsigned>{1, 2}));
  EXPECT_EQ(t.next_arrival(1), 30u);
  EXPECT_TRUE(t.take_arrivals(1, 29).empty());
  EXPECT_EQ(tags(t.take_arrivals(1, 30)), (std::vector<unsigned>{3}));
  EXPECT_EQ(t.next_arrival(1), std::nullopt);
}

TEST(Timeline, SameTimeArrivalsComeOutFirstInFirstOut) {
  Timeline t(1);
  for (unsigned tag : {7u, 3u, 9u, 1u}) t.schedule_arrival(5, 0, tagged(tag));
  t.schedule_arrival(4, 0, tagged(0));
  EXPECT_EQ(tags(t.take_arrivals(0, UINT64_MAX)), (std::vector<unsigned>{0, 7, 3, 9, 1}));
}

TEST(Timeline, EachTargetTakesOnlyItsOwnArrivals) {
  Timeline t(3);
  t.schedule_arrival(5, 2, tagged(20));
  t.schedule_arrival(5, 0, tagged(0));
  t.schedule_arrival(1, 2, tagged(21));
  EXPECT_EQ(tags(t.take_arrivals(2, 10)), (std::vector<unsigned>{21, 20}));
  EXPECT_EQ(t.next_arrival(1), std::nullopt);
  EXPECT_EQ(t.next_arrival(0), 5u);
}

// A sender behind in time reaches a target ahead of it: the arrival is
// already due, and comes out at the target's next take.
TEST(Timeline, AnArrivalScheduledIntoThePastComesOutAtTheNextTake) {
  Timeline t(1);
  t.schedule_arrival(1000, 0, tagged(1));
  EXPECT_EQ(tags(t.take_arrivals(0, 1000)), (std::vector<unsigned>{1}));
  t.schedule_arrival(400, 0, tagged(2));
  t.schedule_arrival(1500, 0, tagged(3));
  EXPECT_EQ(t.next_arrival(0), 400u);
  EXPECT_EQ(tags(t.take_arrivals(0, 1000)), (std::vector<unsigned>{2}));
  EXPECT_EQ(t.next_arrival(0), 1500u);
}

// An event that schedules the next at the same time, as Dolphin's chained
// test: the one scheduled from it comes after those already waiting.
TEST(Timeline, ChainedArrivalsKeepTheirOrder) {
  Timeline t(1);
  t.schedule_arrival(7, 0, tagged(1));
  t.schedule_arrival(7, 0, tagged(10));
  for (const IpiInFlight& ipi : t.take_arrivals(0, 6)) t.schedule_arrival(7, 0, tagged(ipi.sender + 1));
  const std::vector<IpiInFlight> first = t.take_arrivals(0, 7);
  EXPECT_EQ(tags(first), (std::vector<unsigned>{1, 10}));
  for (const IpiInFlight& ipi : first) t.schedule_arrival(7, 0, tagged(ipi.sender + 1));
  t.schedule_arrival(7, 0, tagged(100));
  EXPECT_EQ(tags(t.take_arrivals(0, 7)), (std::vector<unsigned>{2, 11, 100}));
}

TEST(Timeline, SettingATimerAgainCancelsTheExpiryBefore) {
  Timeline t(2);
  t.set_timer(0, 50, true);
  t.set_timer(1, 80, true);
  t.set_timer(0, 200, true);  // re-armed: 50 never comes out
  EXPECT_EQ(t.next_waking_timer(), (CpuAt{80, 1}));
  EXPECT_EQ(t.take_due_timers(100), (std::vector<unsigned>{1}));
  t.set_timer(0, std::nullopt, true);  // disarmed, or woken: nothing comes out
  EXPECT_TRUE(t.take_due_timers(UINT64_MAX).empty());
  EXPECT_EQ(t.next_waking_timer(), std::nullopt);
}

// Same-time expiries go to the lower index, as the scheduler's ties; a timer
// that cannot wake its vCPU is still due (its expiries are settled) but is
// never the one the machine jumps to.
TEST(Timeline, DueTimersComeOutByTimeThenIndexAndOnlyWakingOnesAreJumpedTo) {
  Timeline t(4);
  t.set_timer(3, 10, true);
  t.set_timer(1, 10, true);
  t.set_timer(2, 5, false);
  t.set_timer(0, 40, true);
  EXPECT_EQ(t.next_waking_timer(), (CpuAt{10, 1}));
  EXPECT_FALSE(t.timer_wakes(2));
  EXPECT_EQ(t.take_due_timers(10), (std::vector<unsigned>{2, 1, 3}));
  EXPECT_EQ(t.timer(1), std::nullopt);
  EXPECT_EQ(t.timer(0), 40u);
}

TEST(Timeline, TheEarliestClockRunsNextTiesToTheLowerIndex) {
  Timeline t(3);
  EXPECT_EQ(t.earliest_clock(), std::nullopt);
  t.set_clock(2, 100);
  t.set_clock(1, 100, Timeline::Clock::QuiescentSpin);
  t.set_clock(0, 300);
  EXPECT_EQ(t.earliest_clock(), (CpuAt{100, 1}));
  t.set_clock(1, std::nullopt);  // taken to run
  EXPECT_EQ(t.earliest_clock(), (CpuAt{100, 2}));
  t.set_clock(2, 400);  // re-keyed after its slice
  EXPECT_EQ(t.earliest_clock(), (CpuAt{300, 0}));
}

TEST(Timeline, ParkedSpinnersDoNotHoldBackTheStoringClockUntilAStore) {
  Timeline t(3);
  t.set_clock(0, 100, Timeline::Clock::QuiescentSpin);
  t.set_clock(1, 200, Timeline::Clock::TimedSpin);
  t.set_clock(2, 300);
  EXPECT_EQ(t.earliest_storing_clock(false), 200u);  // one parked on the TSC may still store
  EXPECT_EQ(t.earliest_storing_clock(true), 300u);   // not before a spinner on the TSC would notice
  t.wake_parked_spinners();
  EXPECT_EQ(t.earliest_storing_clock(true), 100u);
  EXPECT_EQ(t.clock_kind(0), Timeline::Clock::MayStore);
}

}  // namespace
}  // namespace topolab
